"""Text handling shared by search, the distillers and the gate: one place for words,
stems, stop words, sentences and dates.

    text/
    ├── words.py     words, stop words and crude stems for comparing texts loosely
    ├── sentences.py sentences by their ends, in one pass
    ├── parsing.py   the blank spaCy pipeline and its sentence starts
    ├── dates.py     time expressions and the dates they name
    ├── language.py  which language a text is in (scripts, frequent words)
    └── rarity.py    how common a word is in its language (wordfreq)
"""
