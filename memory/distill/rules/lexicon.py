"""Word lists the fact rules consult. Kept apart so the rules read as grammar, not data."""

from __future__ import annotations

from mnemoproxy.memory.text.words import NUMBER_WORDS


def words(text: str) -> frozenset[str]:
    """A word list written as one string, so long lists stay readable."""
    return frozenset(text.split())


# Words that end the clause a value is read from: "I live in Berlin and work at Acme".
CLAUSE_BREAKS = words(
    "and but because cause so since while although though whereas which who whom whose "
    "where when then or if unless until once"
)
# Words that stand for someone or something said before: a taste of "them" or "it" means
# nothing once the conversation around it is gone. ("that" and "this" are left out: they
# also open relative clauses, "books that make me think".)
CONTEXT_PRONOUNS = words("it them him her he she they")
# Likewise "this"/"these" ("I love places like this") and the other side of the
# conversation: "the options you provided", "the tasks you want" name what was just shown.
CONTEXT_WORDS = CONTEXT_PRONOUNS | words("this these those you your yours yourself itself")
# A value that ends on one of these was cut short ("decided to go with the", before a quote;
# "prefer online shopping due", before "to").
UNFINISHED_ENDS = words("the a an of on in at to with for from by due both my our their and or")
PRONOUNS = words(
    "i me my mine myself you your yours yourself he him his she her hers it its they them "
    "their this that these those what which who something anything everything nothing "
    "someone anyone everyone one"
)
# Words before a trigger that take the statement out of the user's real present.
HEDGES = words(
    "if unless suppose supposing imagine pretend wish hypothetically whether maybe perhaps "
    "said says told tells asked thinks"
)
QUESTION_OPENERS = words(
    "do does did are is am was were can could would should will shall may might what "
    "what's where who whom whose when why how which have has had"
)


# Words allowed between "I" and the verb of a pattern ("I really love", "I don't live",
# "I've been working", "I no longer work"). Negations are here too: handlers read them.
ADVERBS = sorted(words(
    "really also currently still now actually just recently totally absolutely truly "
    "definitely honestly genuinely seriously particularly especially always personally "
    "originally mostly usually already finally officially kinda kind sort of do does did "
    "not n't nt never no longer 've have has been 'm am"
))
NEGATIONS = words("not n't nt never")

RELATIONS_SINGLE = words(
    "wife husband partner spouse girlfriend boyfriend fiance fiancee fiancé fiancée mom "
    "mother mum dad father stepmom stepmother stepdad stepfather"
)
RELATIONS_MANY = {
    "son": "son", "sons": "son", "daughter": "daughter", "daughters": "daughter",
    "kid": "child", "kids": "child", "child": "child", "children": "child",
    "brother": "brother", "brothers": "brother", "sister": "sister", "sisters": "sister",
    "sibling": "sibling", "siblings": "sibling", "grandson": "grandson",
    "granddaughter": "granddaughter", "grandchild": "grandchild", "grandchildren": "grandchild",
    "grandkids": "grandchild", "cousin": "cousin", "niece": "niece", "nephew": "nephew",
    "grandma": "grandmother", "grandmother": "grandmother", "grandpa": "grandfather",
    "grandfather": "grandfather", "aunt": "aunt", "uncle": "uncle", "twin": "twin",
}
PETS = {
    "dog": "dog", "dogs": "dog", "puppy": "dog", "puppies": "dog", "cat": "cat", "cats": "cat",
    "kitten": "cat", "kittens": "cat", "parrot": "parrot", "parrots": "parrot",
    "hamster": "hamster", "hamsters": "hamster", "rabbit": "rabbit", "rabbits": "rabbit",
    "bunny": "rabbit", "horse": "horse", "horses": "horse", "turtle": "turtle",
    "turtles": "turtle", "guinea": "guinea pig", "snake": "snake", "lizard": "lizard",
}
COUNT_WORDS = {"a": 1, "an": 1} | {w: n for w, n in NUMBER_WORDS.items() if 0 < n <= 10}

MARITAL = words("married single divorced engaged widowed separated")
WORK_STATUS = words("retired unemployed self-employed")
DIETS = words("vegetarian vegan pescatarian pescetarian")
CONDITIONS = words("diabetic celiac coeliac asthmatic epileptic")

JOBS = words(
    "student nurse chef teacher doctor lawyer developer engineer designer artist barista "
    "cashier dentist pharmacist consultant accountant architect analyst scientist programmer "
    "researcher professor surgeon pilot firefighter officer paramedic mechanic electrician "
    "plumber carpenter farmer writer author journalist editor photographer musician actor "
    "actress dancer singer intern manager director ceo cto founder co-founder entrepreneur "
    "freelancer contractor veterinarian vet therapist counselor counsellor psychologist "
    "psychiatrist physician pediatrician midwife caregiver coach trainer tutor lecturer "
    "librarian clerk secretary receptionist waiter waitress bartender baker butcher driver "
    "cook soldier sailor pastor priest rabbi nanny homemaker housewife salesman realtor "
    "banker broker trader economist attorney judge paralegal technician specialist "
    "coordinator administrator assistant associate executive supervisor postdoc undergrad "
    "painter sculptor illustrator animator streamer youtuber blogger influencer"
)
JOB_SUFFIXES = ("er", "or", "ist", "ian", "eer")
NOT_JOBS = words(
    "lover believer beginner member fan mother father brother sister daughter partner loner "
    "worrier dreamer fighter survivor winner loser number newcomer outsider homeowner other "
    "person human foodie introvert extrovert perfectionist optimist pessimist realist "
    "minimalist procrastinator overthinker sucker wanderer learner thinker feminist "
    "christian vegetarian vegan pescatarian guardian civilian sinner mess wreck weirdo nerd "
    "geek fanatic junkie addict enthusiast bookworm lightweight"
)
# What "we work as a ..." can be without being anyone's job ("work as a team").
NOT_ROLES = words("team group unit whole pair couple duo family community crew one")
# Words before the noun that mark "I'm a ..." as a description, not an occupation.
NOT_JOB_MODIFIERS = words("bit little lot big huge total complete kind sort of such")

# Capitalised words that follow "I'm" without being a name.
NOT_NAMES = words(
    "american canadian mexican italian german french dutch greek russian indian korean "
    "australian african asian european latino latina brazilian nigerian christian muslim "
    "hindu buddhist catholic protestant mormon jewish atheist agnostic gay lesbian bi trans "
    "queer black white sorry fine ok okay good great glad happy sure ready done tired back "
    "excited thrilled here there home new stoked pumped lucky grateful thankful blessed "
    "proud busy free bored hungry sad mad angry upset confused curious "
    "lol haha hey hi hello thanks"
)
NOT_NAME_SUFFIXES = ("ish", "ese")

# Lower-case places are accepted only as settlements: "a small town near the coast".
SETTLEMENTS = words(
    "town city village suburb suburbs countryside country state province county "
    "neighborhood neighbourhood area region island capital"
)

# What kind of place a proper name is, when it is said after the name in lower case:
# "St James hospital", "Camden town", "Stanford university".
PLACE_KINDS = SETTLEMENTS | words(
    "hospital clinic pharmacy school college university academy institute "
    "institution library museum gallery church cathedral temple mosque synagogue bank "
    "restaurant cafe café bakery bar pub hotel store shop supermarket market mall factory "
    "mill office studio agency firm company corporation group lab laboratory centre "
    "center foundation council charity shelter trust hall theatre theater cinema stadium "
    "arena park zoo farm garden gardens airport station port harbour harbor prison "
    "court department ministry embassy branch campus headquarters salon gym club nursery "
    "kindergarten daycare"
)

# Preference objects that name no stable taste ("I love that idea").
VAGUE_OBJECTS = words(
    "idea ideas sound sounds way thought thoughts fact look vibe vibes part feeling advice "
    "question tip tips suggestion suggestions story photo pic picture "
    # Qualities of something just shown or told ("I love the colour!", "the energy").
    "color colour colors colours energy freedom rush smell taste feel atmosphere detail "
    "details view"
)
# What an assistant lays out for the user to pick from: "I like the third option", "I love
# the countdown idea" is a reaction to a list just shown, not a taste to keep.
PRESENTED = words(
    "idea ideas option options suggestion suggestions template templates structure schedule "
    "routine timeline outline approach plan list draft version format layout theme themes "
    "recipe prompts"
)
# "the second one", "the last option": a position in a list just shown.
ORDINALS = words("first second third fourth fifth sixth last latter former 1st 2nd 3rd 4th 5th")
TRAILING_FILLERS = words("a lot so much too very well as lately though anyway either anymore")
DRINKS = words("tea coffee beer wine water juice soda milk cocoa")
SPELLING = {"color": "colour", "flavor": "flavour", "favorite": "favourite"}
