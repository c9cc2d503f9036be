"""The gate's cues beyond English: a small lexicon per language of the words that show a
message's shape (the user speaking of themselves, a question, a task, a pointer back at
what was said, advice or an explanation anyone could want, a particular asked for, a name),
read without a parser. English has the full pattern set (cues.py, personal.py); other
languages decide on these shapes and on what memory holds.

Languages written with spaces are read word by word (French elisions: "j'ai" is "j" and
"ai"); the unspaced ones (Chinese, Japanese) by the presence of their markers in the
text; Korean word by word, its pronouns with their particles, its question words by the
start of a word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from mnemoproxy.gate.relevance.cues import word_set
from mnemoproxy.gate.relevance.scan import (
    PARTICULAR_SENTENCES,
    PARTICULAR_WORDS,
    REASON_WORDS,
    SENTENCE_BREAK,
    WORDS_OF,
)


@dataclass(frozen=True)
class Lexicon:
    # I, me, my, we, our in their forms (two words joined by "_": "a gente"), and the
    # user's own people named without "my" ("Mama", "папа", "娘"), as these languages name
    # them.
    first_person: frozenset[str]
    questions: frozenset[str]  # question words
    tasks: frozenset[str]  # imperatives that open a task ("write", "translate", ...)
    # Pointing back at what was said ("I told you", "you said"), or asking what a thing
    # was again where the subject goes unsaid ("집들이 때 만든 요리가 뭐였더라?", "...来着"):
    # a thing of the user's own.
    recall: frozenset[str]
    # Asking whether the model remembers or knows a thing, or to be reminded of it
    # ("tu te souviens", "weißt du", "提醒我"), words or pairs joined by "_": asked of the
    # world ("¿sabes quién pintó el Guernica?") as often as of the user's, so it points
    # back only where the message also speaks of the user, as "remind me" in English
    # (scan.py). Its "me" is the one the request is for.
    reminders: frozenset[str] = frozenset()
    # What anyone in the user's place would want, even asked in the first person: advice
    # ("can I", "should I", "is it worth", "tips") or an explanation ("why").
    general: frozenset[str] = frozenset()
    # Asking for a particular: when (or which day, which date), where, who, what someone
    # or something is called.
    particular: frozenset[str] = frozenset()
    # Where the pronoun is dropped, the verb's ending says "I" or "we" ("compré",
    # "comprei", "compramos"): each ending with the fewest letters its word has.
    first_person_endings: tuple[tuple[str, int], ...] = ()
    ways: frozenset[str] = frozenset()  # "how", opening a question of what to do
    # A time before the conversation ("yesterday", "last time", "a few weeks ago") and one
    # within the running conversation ("just now", "a moment ago"): a follow-up in a
    # thread may say the second, never the first (thread.py).
    before_now: frozenset[str] = frozenset()
    within_now: frozenset[str] = frozenset()
    capitalises_nouns: bool = False  # German: a capital letter marks no name
    reading: str = "words"  # "words", "markers" (unspaced) or "prefixes" (Korean)


def _with_particles(nouns: str) -> frozenset[str]:
    """Korean nouns as they are written: alone, or with a particle attached."""
    particles = ("", "이", "가", "은", "는", "을", "를", "의", "도", "한테", "에게", "랑", "하고",
                 "님")
    return frozenset(noun + particle for noun in nouns.split() for particle in particles)


LEXICONS: dict[str, Lexicon] = {
    "de": Lexicon(
        word_set("ich mich mir mein meine meinen meinem meiner meines wir uns unser unsere "
                 "unseren unserem unserer")
        | word_set("mama papa mutti vati oma opa"),
        word_set("wer wen wem wessen was wann wo wohin woher wie warum wieso weshalb welche "
                 "welcher welches welchen welchem wieviel wieviele"),
        word_set("schreib schreibe übersetze übersetz erkläre erklär fasse formuliere "
                 "korrigiere verfasse erstelle nenne beschreibe stell"),
        word_set("erzählt gesagt erwähnt"),
        reminders=word_set("erinnerst erinnern erinnere erinner erinnere_mich erinner_mich weißt "
                           "nochmal nochmals noch_mal"),
        general=word_set("warum wieso weshalb kann könnte sollte soll muss müsste lohnt "
                         "empfiehlst empfehlen tipps"),
        particular=word_set("wann wo wer wem wen wessen wohin heißt heißen hieß hießen name "
                            "namen tag datum"),
        before_now=word_set("gestern vorgestern neulich letztens damals letztes_mal letzte_woche "
                            "letzten_monat letztes_jahr vor_kurzem vor_einer vor_einem vor_ein "
                            "vor_zwei vor_drei"),
        within_now=word_set("eben vorhin"),
        ways=word_set("wie"),
        capitalises_nouns=True,
    ),
    "es": Lexicon(
        word_set("yo me mi mis mío mía míos mías conmigo nosotros nosotras nos nuestro "
                 "nuestra nuestros nuestras tengo soy estoy estuve")
        | word_set("mamá papá abuela abuelo abuelita abuelito"),
        word_set("qué que q quién quiénes cuándo dónde cómo cuál cuáles cuánto cuánta cuántos "
                 "cuántas"),
        word_set("escribe escríbeme traduce tradúceme explica explícame resume redacta "
                 "corrige describe imagina haz"),
        word_set("dije conté comenté mencioné dijiste contaste comentaste mencionaste "
                 "recomendaste"),
        reminders=word_set("recuerdas acuerdas acordás recuérdame recuerdame recordame "
                           "me_recuerdas sabes sabés"),
        general=word_set("por_qué porqué hay_que puedo podría debo debería conviene recomiendas "
                         "recomiendan consejos"),
        particular=word_set("cuándo dónde quién quiénes llama llaman llamaba nombre día fecha"),
        before_now=word_set("ayer anteayer otro_día otro_dia una_vez mes_pasado año_pasado "
                            "ano_pasado verano_pasado semana_pasada hace_unos hace_unas "
                            "hace_tiempo hace_días hace_dias hace_semanas hace_meses"),
        within_now=word_set("recién recien"),
        first_person_endings=(("é", 5), ("amos", 6), ("imos", 6)),
        ways=word_set("cómo como"),
    ),
    "fr": Lexicon(
        word_set("je j me m moi mon ma mes nous notre nos")
        | word_set("maman papa mamie papi papy"),
        word_set("que qu quoi qui quand où comment quel quelle quels quelles combien "
                 "pourquoi"),
        word_set("écris écrivez traduis traduisez explique expliquez résume résumez rédige "
                 "rédigez corrige corrigez décris imagine fais"),
        word_set("dit raconté mentionné"),
        reminders=word_set("déjà deja souviens rappelle rappelles rappelez rappelle_moi "
                           "rappelez_moi tu_sais sais_tu vous_savez savez_vous"),
        general=word_set("pourquoi peux pourrais dois devrais faut conseilles conseils"),
        particular=word_set("quand où qui appelle appellent appelait nom jour date"),
        before_now=word_set("hier autre_jour dernière_fois derniere_fois première_fois "
                            "premiere_fois mois_dernier semaine_dernière année_dernière "
                            "été_dernier une_fois"),
        within_now=word_set("instant"),
        ways=word_set("comment"),
    ),
    "pt": Lexicon(
        word_set("eu me mim meu minha meus minhas comigo nós nosso nossa nossos nossas "
                 "tenho a_gente")
        | word_set("mamãe papai vovó vovô"),
        word_set("que quê q quem quando onde como qual quais quanto quanta quantos quantas"),
        word_set("escreva escreve traduza traduz explique explica resuma resume redija "
                 "corrija descreva imagine finja faça"),
        word_set("disse contei falei mencionei"),
        reminders=word_set("lembra lembras lembre lembra_me lembre_me me_lembra me_lembre "
                           "sabe sabes"),
        general=word_set("por_que porquê tem_que posso poderia devo deveria vale recomenda dicas"),
        particular=word_set("quando onde quem chama chamam chamava nome dia data"),
        before_now=word_set("ontem anteontem outro_dia última_vez ultima_vez mês_passado "
                            "mes_passado ano_passado semana_passada uma_vez há_uns há_umas "
                            "há_tempo"),
        within_now=word_set("agorinha"),
        first_person_endings=(("ei", 5), ("amos", 6), ("ámos", 6), ("imos", 6)),
        ways=word_set("como"),
    ),
    "it": Lexicon(
        word_set("io mi me mio mia miei mie noi ci nostro nostra nostri nostre")
        | word_set("mamma papà nonna nonno"),
        word_set("che cosa chi quando dove come quale quali quanto quanta quanti quante "
                 "perché"),
        word_set("scrivi traduci spiega riassumi correggi descrivi immagina fai"),
        word_set("detto raccontato menzionato"),
        reminders=word_set("ricordi ricorda ricordami mi_ricordi sai"),
        general=word_set("perché posso potrei devo dovrei conviene consigli"),
        particular=word_set("quando dove chi chiama chiamano chiamava nome giorno data"),
        ways=word_set("come"),
    ),
    "nl": Lexicon(
        word_set("ik me mij mijn wij we ons onze")
        | word_set("mama papa oma opa"),
        word_set("wie wat wanneer waar hoe waarom welke welk hoeveel"),
        word_set("schrijf vertaal leg vat corrigeer beschrijf stel"),
        word_set("gezegd verteld genoemd"),
        reminders=word_set("herinner herinnert herinner_me herinner_mij weet_je weet_jij weet_u"),
        general=word_set("waarom kan kun moet zou tips"),
        particular=word_set("wanneer waar wie heet heten naam datum"),
        ways=word_set("hoe"),
    ),
    "ru": Lexicon(
        word_set("я меня мне мной мой моя моё мое мою мои моего моей моему моём моем моих моим "
                 "моими мы нас нам нами наш наша наше нашу наши нашего нашей нашему нашем "
                 "наших")
        | word_set("мама мамы маме маму мамой папа папы папе папу папой бабушка бабушки "
                   "бабушке дедушка дедушки дедушке"),
        word_set("что че чё кто кого кому когда где куда откуда как какой какая какое какие "
                 "каком сколько почему зачем чей чья"),
        word_set("напиши напишите переведи переведите объясни объясните перескажи "
                 "сократи составь исправь опиши представь представьте"),
        word_set("рассказывал рассказывала рассказал рассказала говорил говорила упоминал "
                 "упоминала"),
        reminders=word_set("помнишь помните напомни напомните напомни_мне напомните_мне "
                           "знаешь знаете"),
        general=word_set("почему отчего стоит нужно надо можно лучше посоветуешь советы"),
        particular=word_set("когда где кто кого кому куда зовут звали называется название имя "
                            "число числа дата"),
        before_now=word_set("вчера позавчера недавно однажды назад прошлый прошлой прошлом "
                            "прошлого прошлую как_то"),
        within_now=word_set("только_что"),
        ways=word_set("как"),
    ),
    "zh": Lexicon(
        # The user's own people, named without "my" as these languages do ("妈生日").
        frozenset({"我", "咱", "爸", "妈", "老婆", "老公", "女儿", "儿子", "外婆", "外公",
                   "奶奶", "爷爷", "姥姥", "姥爷"}),
        frozenset({"什么", "啥", "谁", "哪", "几", "多少", "怎么", "为什么", "吗", "呢",
                   "是不是"}),
        frozenset({"翻译", "写一", "写个", "帮我写", "解释", "总结", "改写", "润色", "扮演",
                   "假装", "讲讲", "介绍一下", "科普"}),
        # "来着", like Japanese "っけ" and Korean "였더라": what was it again? Said where the
        # subject is left out, it asks back a thing of the user's own.
        frozenset({"说过", "告诉过", "提过", "讲过", "来着"}),
        reminders=frozenset({"记得", "提醒"}),
        general=frozenset({"为什么", "为啥", "办法", "应该", "值得", "建议", "推荐", "怎样才能",
                           "怎么才能", "如何"}),
        particular=frozenset({"什么时候", "哪天", "几号", "星期几", "哪里", "哪儿", "谁", "叫什么",
                              "名字", "周几", "礼拜几"}),
        before_now=frozenset({"上次", "上回", "昨天", "前天", "上周", "上个月", "上个星期", "去年",
                              "前几天", "那天", "那次", "以前"}),
        within_now=frozenset({"刚才", "刚刚"}),
        reading="markers",
    ),
    "ja": Lexicon(
        frozenset({"私", "わたし", "僕", "ぼく", "俺", "自分", "うち", "娘", "息子", "妻",
                   "夫", "母", "父", "祖母", "祖父", "家族"}),
        # "教えて" ("tell me") asks, as Korean "알려" does: what it asks about decides.
        frozenset({"何", "なに", "なん", "誰", "だれ", "どこ", "いつ", "どう", "どれ",
                   "どの", "いくら", "ですか", "ますか", "か？", "教えて"}),
        frozenset({"翻訳", "書いて", "説明して", "まとめて", "要約", "訳して", "演じて",
                   "ふりをして", "解説"}),
        frozenset({"言った", "話した", "伝えた", "教えた", "っけ"}),
        reminders=frozenset({"覚えて"}),
        general=frozenset({"なぜ", "どうして", "ばいい", "たらいい", "コツ", "おすすめ", "方法",
                           "べき"}),
        particular=frozenset({"いつ", "どこ", "誰", "だれ", "名前", "曜日", "何日"}),
        before_now=frozenset({"前に", "この前", "こないだ", "この間", "昨日", "先週", "先月",
                              "去年", "以前", "前回"}),
        within_now=frozenset({"さっき", "先ほど", "先程"}),
        reading="markers",
    ),
    "ko": Lexicon(
        word_set("나 나는 나를 나의 나도 나한테 내 내가 내게 저 저는 저를 저의 저도 저한테 "
                 "제 제가 제게 우리 우리는 우리가 우리를 우리의 우리집")
        | _with_particles("엄마 아빠 어머니 아버지 딸 아들 아내 남편 손녀 손자 할머니 "
                          "할아버지 동생 부모님"),
        frozenset({"뭐", "무엇", "무슨", "누구", "누가", "언제", "어디", "어떻게", "왜",
                   "몇", "며칠", "어느", "얼마", "뭐지", "알려"}),
        frozenset({"번역", "써줘", "써 줘", "작성", "설명해", "요약", "역할"}),
        frozenset({"말했", "얘기했", "말씀드렸", "알려드렸", "라고 했", "였더라", "뭐였", "었지",
                   "었죠"}),
        reminders=frozenset({"기억"}),
        general=frozenset({"왜", "해야", "좋을까", "방법", "는 법", "추천", "면 좋"}),
        particular=frozenset({"언제", "어디", "누구", "누가", "며칠", "이름", "요일"}),
        before_now=frozenset({"전에", "지난번", "저번", "어제", "지난주", "지난달", "작년",
                              "예전"}),
        within_now=frozenset({"아까", "방금"}),
        reading="prefixes",
    ),
}

# How a request is put in the unspaced scripts, beside the lexicon's markers ("...を教えて
# ください", "请...一下"): said around what is asked, never what it is about.
ASKING_FORMS: dict[str, tuple[str, ...]] = {
    "ja": ("ください", "下さい", "もらえますか", "もらえる", "くれますか", "くれる", "ほしい",
           "でしたか", "でした", "ですか", "だっけ"),
    "zh": ("请", "一下", "吗", "呢"),
}


def content_of(text: str, language: str | None) -> str:
    """`text` without the words of how it is asked (its lexicon's words, and in a script
    without spaces ASKING_FORMS and, in Japanese, its hiragana): what memory is asked to
    hold is what the message is about. In the unspaced scripts memory's words are pairs of
    characters, and a pair drawn from "教えてください" or "について" names nothing the
    user spoke of. Texts in a language without a lexicon are returned as they are."""
    lexicon = LEXICONS.get(language or "")
    if lexicon is None or lexicon.reading == "prefixes":
        return text
    forms = (lexicon.first_person | lexicon.questions | lexicon.tasks | lexicon.recall
             | lexicon.reminders | lexicon.general | lexicon.particular)
    if lexicon.reading == "words":
        return _WORD.sub(lambda word: " " if word[0].lower() in forms else word[0], text)
    forms |= frozenset(ASKING_FORMS.get(language or "", ()))
    for form in sorted(forms, key=len, reverse=True):  # longer forms before their parts
        text = text.replace(form, " ")
    if language == "ja":  # hiragana carries particles and endings; names are kanji, katakana
        text = _HIRAGANA.sub(" ", text)
    return text


_HIRAGANA = re.compile("[\u3041-\u309f]+")
# Accented vowels: a word with one before its ending ("últimos", "próximos") is no verb;
# nor is a word after an article ("un comité").
DETERMINERS = word_set("el la los las un una unos unas del al o a os as um uma uns umas "
                       "do da dos das no na ao")
_ACCENTED = frozenset("áéíóúâêôãõàü")


def _says_first_person(word: str, endings: tuple[tuple[str, int], ...]) -> bool:
    """Whether a word is a verb in the first person by its ending alone."""
    return any(
        word.endswith(ending) and len(word) >= letters
        and _ACCENTED.isdisjoint(word[: -len(ending)])
        for ending, letters in endings
    )


_WORD = re.compile(r"[^\W\d_]+")
# A Korean question word opens its word ("뭐였더라", "며칠이었는지"): the starts looked at.
KOREAN_WORD_CHARS = 4
QUESTION_MARKS = ("?", "？", "؟")
LEADING_PARTICLE_CHARS = 2
FRAGMENT_WORDS = 5
_REQUEST_OBJECT = re.compile("(?:给|帮|替|跟|让|告诉|教|对|提醒|私に|僕に)(?:我|私|僕)?")


@dataclass(frozen=True)
class Shape:
    """What the lexicon finds in a message."""

    first_person: bool
    question: bool
    task: bool
    recall: bool  # pointing back at what was said, or asking back a thing of the user's
    # Asking a thing back (a reminder), whoever's it is: a particular, which a
    # conversation that said it answers.
    reminded: bool = False
    general: bool = False
    particular: bool = False
    # Words written as names, inside a sentence ("la prima Marta"), lower-cased.
    names: frozenset[str] = frozenset()
    # What the message quotes as a title (『博士の愛した数式』, «Patria»), lower-cased.
    titles: tuple[str, ...] = ()
    # It names a time before the conversation; it points into the running one.
    before_now: bool = False
    within_now: bool = False

    def in_title(self, word: str) -> bool:
        """Whether a search term (a word, or a pair of characters) is a piece of a title."""
        joined = word.replace(" ", "")
        return any(joined in title for title in self.titles)


def read_shape(text: str, language: str) -> Shape | None:
    """The message's shape in `language`, or None for a language without a lexicon."""
    lexicon = LEXICONS.get(language)
    if lexicon is None:
        return None
    stripped = text.strip()
    asks = stripped.endswith(QUESTION_MARKS) or _asks_then_says_why(stripped)
    if lexicon.reading == "markers":
        found = lambda words: any(word in stripped for word in words)  # noqa: E731
        # "给我讲讲", "帮我写", "提醒我": the user as the one a request is for, not as its
        # subject.
        own = _REQUEST_OBJECT.sub("", stripped)
        first_person = any(word in own for word in lexicon.first_person)
        reminded = found(lexicon.reminders)
        return Shape(first_person, asks or reminded or found(lexicon.questions),
                     found(lexicon.tasks), found(lexicon.recall) or (reminded and first_person),
                     reminded, general=found(lexicon.general),
                     particular=reminded or found(lexicon.particular), titles=_titles_in(stripped),
                     before_now=found(lexicon.before_now),
                     within_now=found(lexicon.within_now))
    words = [w.lower() for w in _WORD.findall(stripped)]
    vocabulary = set(words)
    if lexicon.reading == "prefixes":
        heads = {w[:n] for w in words for n in range(1, min(len(w), KOREAN_WORD_CHARS) + 1)}
        first_person = not vocabulary.isdisjoint(lexicon.first_person)
        reminded = any(word in stripped for word in lexicon.reminders)
        return Shape(first_person, asks or reminded or bool(heads & lexicon.questions),
                     any(word in stripped for word in lexicon.tasks),
                     any(word in stripped for word in lexicon.recall) or (
                         reminded and first_person),
                     reminded,
                     general=any(word in stripped for word in lexicon.general),
                     particular=reminded or any(word in stripped for word in lexicon.particular),
                     titles=_titles_in(stripped),
                     before_now=any(word in stripped for word in lexicon.before_now),
                     within_now=any(word in stripped for word in lexicon.within_now))
    # Two words may say it together ("por qué", "noch mal"): looked up joined by "_".
    pairs = {f"{a}_{b}" for a, b in pairwise(words)}
    said = vocabulary | pairs
    reminders = _reminder_places(words, lexicon.reminders)
    reminded = bool(reminders)
    # The "me" of a reminder ("rappelle-moi") or of a task opening the message ("erklär
    # mir", "explique-moi") is the one the request is for.
    for_me = reminders | ({1} if len(words) > 1 and words[0] in lexicon.tasks else set())
    first_person = any(
        n not in for_me and (word in lexicon.first_person or (
            _says_first_person(word, lexicon.first_person_endings)
            and (n == 0 or words[n - 1] not in DETERMINERS)))
        for n, word in enumerate(words)) or not lexicon.first_person.isdisjoint(pairs)
    # A fragment with no question word ("Tomatensorte auf dem Balkon?") looks up what it
    # names; a reminder asks a particular back.
    particular = reminded or not vocabulary.isdisjoint(lexicon.particular) or (
        asks and len(words) <= FRAGMENT_WORDS and vocabulary.isdisjoint(lexicon.questions))
    return Shape(
        first_person=first_person,
        # Opening the message, or after a particle that leads in ("c quoi ...", "et où").
        question=asks or reminded or not lexicon.questions.isdisjoint(
            words[:2] if words and len(words[0]) <= LEADING_PARTICLE_CHARS else words[:1]),
        task=bool(words) and words[0] in lexicon.tasks,
        recall=not lexicon.recall.isdisjoint(vocabulary) or (reminded and first_person),
        reminded=reminded,
        # "How do I ...", as in English, asks a way anyone could take; so does a "how" that
        # opens the question after the situation ("tengo la mampara llena de cal, ¿cómo la
        # limpio?").
        general=not lexicon.general.isdisjoint(said) or (
            first_person and not particular
            and not lexicon.ways.isdisjoint(_clause_openers(stripped))),
        particular=particular,
        names=frozenset() if lexicon.capitalises_nouns else _names_in(stripped),
        titles=_titles_in(stripped),
        before_now=not lexicon.before_now.isdisjoint(said),
        within_now=not lexicon.within_now.isdisjoint(said),
    )


_CLAUSE_OPENER = re.compile(r"(?:^|[,;:.!?¿¡—–])[^\S\n]*([^\W\d_]+)", re.MULTILINE)


def _clause_openers(text: str) -> frozenset[str]:
    """The words that open the message, one of its lines or one of its clauses."""
    return frozenset(match[1].lower() for match in _CLAUSE_OPENER.finditer(text))


def _reminder_places(words: list[str], reminders: frozenset[str]) -> frozenset[int]:
    """Where the words ask to be reminded or whether the model knows: a reminder's word,
    or both words of a reminder said as a pair ("rappelle moi", "me lembra")."""
    places = {n for n, word in enumerate(words) if word in reminders}
    for n, pair in enumerate(pairwise(words)):
        if "_".join(pair) in reminders:
            places |= {n, n + 1}
    return frozenset(places)


def _asks_then_says_why(text: str) -> bool:
    """A question followed by a short word of why it is asked ("¿cuándo era la cita? no la
    encuentro"), as in English (scan.py)."""
    last = max(text.rfind(mark) for mark in QUESTION_MARKS)
    return last > 0 and 0 < len(WORDS_OF.findall(text[last + 1:])) <= REASON_WORDS


def asks_at_length(text: str) -> bool:
    """Whether a message in a conversation tells at length what it asks: its question and
    what follows, when the sentences before it are short words to the last reply ("Gut,
    dann rufe ich morgen an. Wie hieß die Tierärztin?"), or else the whole message."""
    sentences = [s for s in SENTENCE_BREAK.split(text) if s.strip()]
    asked = max((n for n, sentence in enumerate(sentences)
                 if any(mark in sentence for mark in QUESTION_MARKS)), default=0)
    if any(len(WORDS_OF.findall(s)) > REASON_WORDS for s in sentences[:asked]):
        asked = 0
    sentences = sentences[asked:]
    return (len(sentences) >= PARTICULAR_SENTENCES
            or sum(len(WORDS_OF.findall(s)) for s in sentences) > PARTICULAR_WORDS)


# A title between quotation marks of any script, up to a bounded length.
_TITLE = re.compile(r"[『「«“\"]([^』」»”\"\n]{1,60})[』」»”\"]")


def _titles_in(text: str) -> tuple[str, ...]:
    return tuple(match.group(1).lower() for match in _TITLE.finditer(text))


def _names_in(text: str) -> frozenset[str]:
    """The words of `text` written with a capital inside a sentence (after a letter or a
    comma, not after what opens one), lower-cased."""
    names = set()
    for match in _WORD.finditer(text):
        word = match[0]
        if not word[0].isupper() or match.start() == 0:
            continue
        before = text[max(0, match.start() - 2):match.start()].rstrip()
        # After a letter, a comma, or an elided article ("le brevet d'Hugo").
        if before and (before[-1].isalpha() or before[-1] in ",'’"):
            names.add(word.lower())
    return frozenset(names)
