"""Evidence for short Latin- and Cyrillic-script text that character n-grams miss.

On two or three words, lingua's n-gram models often lose to chance: they read
"Merci" as Italian and "Ist die Bibliothek" as Dutch. Two kinds of evidence
are nearly free and very reliable on exactly such input:

- letters only some languages write: ``¿ ¡ ñ`` are Spanish, ``ß`` German,
  ``ł ą ę`` Polish, ``ğ ş ı`` Turkish, ``ơ ư đ`` Vietnamese, ``і ї є ґ``
  Ukrainian, ``ы э ъ ё`` Russian;
- each language's commonest function words and greetings: the words a short
  text is most likely made of.

The word lists are each language's high-frequency closed-class words
(articles, pronouns, auxiliaries, prepositions, conjunctions) and its
everyday courtesy words, from general knowledge of the languages; they were
not drawn from the detection test sentences.
"""

from __future__ import annotations

import re

WORDS: dict[str, frozenset[str]] = {
    "en": frozenset("""
        the a an and or but of to in on at for with from by about as into is are was were be been being
        am have has had do does did not no yes it its this that these those i you he she we they me him
        us them my your his her our their what where when why how who which can could will would shall
        should may might must there here hello hi hey thanks thank please sorry good morning evening
        night ok okay goodbye bye welcome just very much more some any all one""".split()),
    "fr": frozenset("""
        le la les un une des du de et ou mais est sont suis es êtes sommes être avoir ai as avez avons
        ont je tu il elle nous vous ils elles on ce cet cette ces que qui quoi où pas ne oui non merci
        bonjour bonsoir salut au aux avec pour dans sur sous chez très bien plaît moi toi lui mon ma mes
        ton ta tes son sa ses notre votre leur aussi comme fait été qu""".split()),
    "de": frozenset("""
        der die das den dem des ein eine einen einem einer und oder aber ist sind war waren bin bist
        hast hat haben habe ich du er sie es wir ihr nicht kein keine ja nein danke bitte hallo guten
        morgen tag abend nacht mit für auf aus von zu zum zur im am um auch wie was wo wer warum sehr
        schon noch dieses diese dieser mein meine dein deine wird werden kann können gibt tschüss
        entschuldigung""".split()),
    "es": frozenset("""
        el la los las un una unos unas y o pero de del al en con por para es son está están estoy
        estás era ser estar hay yo tú él ella nosotros ustedes ellos ellas que qué quién dónde cuándo
        cómo no sí gracias hola buenos buenas días tardes noches muy muchas mucho también ya este esta
        esto ese esa mi tu su lo le me se te nos has he ha han hemos adiós favor""".split()),
    "pt": frozenset("""
        o a os as um uma e mas de do da dos das em no na nos nas com por para é são está estão estou
        eu você ele ela nós eles elas que não sim obrigado obrigada olá oi bom boa dia tarde noite
        muito também já este esta isso isto meu minha seu sua tem têm foi ser estar tchau como onde
        quando""".split()),
    "it": frozenset("""
        il lo la i gli le un una uno e ma di del della dei delle in nel nella con per su è sono sei
        siamo era io tu lui lei noi voi loro che non sì grazie ciao buongiorno buonasera molto anche
        già questo questa quello quella mio mia ho hai ha abbiamo come dove quando perché prego
        arrivederci""".split()),
    "nl": frozenset("""
        de het een en of maar van in op met voor naar is zijn was waren ben bent heb hebt heeft hebben
        ik jij je hij zij ze wij we jullie niet geen ja nee dank bedankt hallo goedemorgen goed dag wat
        waar wie waarom hoe ook al dit dat deze mijn jouw erg wel alstublieft graag tot ziens""".split()),
    "ru": frozenset("""
        я ты он она оно мы вы они и а но в на не что это как с со по у к о от за из да нет спасибо
        привет здравствуйте пожалуйста его её их мой моя твой был была было были есть очень уже
        ещё где когда почему кто""".split()),
    "uk": frozenset("""
        я ти він вона воно ми ви вони і й та але в у на не що це як з із по до від за так ні дякую
        привіт будь ласка його її їх мій моя твій був була було були є дуже вже ще де коли чому хто""".split()),
}

LETTERS: dict[str, str] = {
    "es": "¿¡ñ",
    "de": "ß",
    "pl": "łąęćńśźż",
    "tr": "ğşı",
    "vi": "ơưđạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ",
    "pt": "õ",
    "fr": "œèêëîïûù",
    "uk": "іїєґ",
    "ru": "ыэъё",
}
_LETTER_LANGS: dict[str, set[str]] = {}
for _code, _letters in LETTERS.items():
    for _letter in _letters:
        _LETTER_LANGS.setdefault(_letter, set()).add(_code)

_TOKEN = re.compile(r"[^\W\d_]+")
WORD_BOOST = 2.0
LETTER_BOOST = 6.0


def boosts(text: str, candidates: tuple[str, ...] | list[str]) -> dict[str, float]:
    """A multiplier per candidate language (1.0 = no evidence)."""
    lowered = text.lower()
    tokens = _TOKEN.findall(lowered)
    letters = {ch for ch in lowered if ch in _LETTER_LANGS}
    out: dict[str, float] = {}
    for code in candidates:
        words = WORDS.get(code)
        word_hits = sum(1 for t in tokens if t in words) if words else 0
        letter_hits = sum(1 for ch in letters if code in _LETTER_LANGS[ch])
        out[code] = (1 + WORD_BOOST * word_hits) * (1 + LETTER_BOOST * letter_hits)
    return out
