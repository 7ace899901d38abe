"""A detection test set built from each language's own script and sample sentences.

Each sentence is cut into short inputs of 1-20 characters: CJK text at any
character, other scripts at word boundaries (a user types whole words), so
"Guten Morgen, wie geht es dir?" gives "Guten", "Guten Morgen," and so on.
The sentences are everyday ones written for these tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LENGTHS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20)
UNSPACED = {"zh", "zt", "ja"}
BUCKETS = ((1, 4), (5, 9), (10, 14), (15, 20))

SENTENCES: dict[str, list[str]] = {
    "zh": [
        "我们明天早上去北京开会。", "这个问题已经解决了，请放心。", "你吃饭了吗？我刚下班。",
        "请把窗户关上，外面很冷。", "图书馆周末也开门吗？", "他说这部电影非常感人。",
        "这家饭馆的菜又便宜又好吃。", "经济发展需要稳定的环境。", "孩子们在公园里放风筝。",
        "医生建议他多喝水，早点休息。",
    ],
    "zt": [
        "我們明天早上去台北開會。", "這個問題已經解決了，請放心。", "你吃飯了嗎？我剛下班。",
        "請把窗戶關上，外面很冷。", "圖書館週末也開門嗎？", "他說這部電影非常感人。",
        "這家飯館的菜又便宜又好吃。", "經濟發展需要穩定的環境。", "孩子們在公園裡放風箏。",
        "醫生建議他多喝水，早點休息。",
    ],
    "ja": [
        "明日の朝、東京で会議があります。", "この問題はもう解決しました。", "ご飯を食べましたか？",
        "窓を閉めてください、外は寒いです。", "図書館は週末も開いていますか？",
        "この映画はとても感動的でした。",
        "駅までどのくらいかかりますか。", "私は毎朝コーヒーを飲みます。", "子供たちは公園で遊んでいます。",
        "ありがとうございます、助かりました。",
    ],
    "ko": [
        "내일 아침에 서울에서 회의가 있어요.", "이 문제는 이미 해결되었습니다.",
        "밥 먹었어요? 저는 방금 퇴근했어요.", "창문을 닫아 주세요, 밖이 추워요.",
        "도서관은 주말에도 문을 여나요?", "이 영화는 정말 감동적이었어요.",
        "역까지 얼마나 걸려요?", "저는 매일 아침 커피를 마셔요.", "아이들이 공원에서 놀고 있어요.",
        "감사합니다, 정말 도움이 됐어요.",
    ],
    "en": [
        "We have a meeting in London tomorrow morning.", "This problem has already been solved.",
        "Have you eaten yet? I just got off work.", "Please close the window, it is cold outside.",
        "Is the library open on weekends?", "He said the movie was very moving.",
        "How long does it take to get to the station?", "I drink a cup of coffee every morning.",
        "The children are playing in the park.", "Thank you very much for your help.",
    ],
    "fr": [
        "Nous avons une réunion à Paris demain matin.", "Ce problème a déjà été résolu.",
        "Tu as déjà mangé ? Je viens de finir le travail.",
        "Fermez la fenêtre, s'il vous plaît, il fait froid.",
        "La bibliothèque est-elle ouverte le week-end ?", "Il a dit que le film était très émouvant.",
        "Combien de temps faut-il pour aller à la gare ?", "Je bois un café tous les matins.",
        "Les enfants jouent dans le jardin.", "Merci beaucoup pour votre aide.",
    ],
    "de": [
        "Wir haben morgen früh eine Besprechung in Berlin.", "Dieses Problem wurde bereits gelöst.",
        "Hast du schon gegessen? Ich habe gerade Feierabend.",
        "Bitte schließ das Fenster, draußen ist es kalt.",
        "Ist die Bibliothek am Wochenende geöffnet?", "Er sagte, der Film sei sehr bewegend.",
        "Wie lange dauert es bis zum Bahnhof?", "Ich trinke jeden Morgen eine Tasse Kaffee.",
        "Die Kinder spielen im Garten.", "Vielen Dank für Ihre Hilfe.",
    ],
    "es": [
        "Mañana por la mañana tenemos una reunión en Madrid.", "Este problema ya se ha resuelto.",
        "¿Ya has comido? Acabo de salir del trabajo.", "Cierra la ventana, por favor, hace frío fuera.",
        "¿La biblioteca abre los fines de semana?", "Dijo que la película era muy conmovedora.",
        "¿Cuánto se tarda en llegar a la estación?", "Tomo un café todas las mañanas.",
        "Los niños están jugando en el parque.", "Muchas gracias por tu ayuda.",
    ],
    "ru": [
        "Завтра утром у нас совещание в Москве.", "Эта проблема уже решена.",
        "Ты уже поел? Я только что с работы.", "Закрой окно, пожалуйста, на улице холодно.",
        "Библиотека работает по выходным?", "Он сказал, что фильм очень трогательный.",
        "Сколько времени идти до вокзала?", "Каждое утро я пью чашку кофе.",
        "Дети играют в парке.", "Большое спасибо за вашу помощь.",
    ],
    "ar": [
        "لدينا اجتماع في القاهرة صباح الغد.", "تم حل هذه المشكلة بالفعل.",
        "هل أكلت؟ لقد انتهيت من العمل للتو.", "أغلق النافذة من فضلك، الجو بارد في الخارج.",
        "هل المكتبة مفتوحة في عطلة نهاية الأسبوع؟", "قال إن الفيلم كان مؤثرا جدا.",
        "كم من الوقت يستغرق الوصول إلى المحطة؟", "أشرب فنجان قهوة كل صباح.",
        "الأطفال يلعبون في الحديقة.", "شكرا جزيلا على مساعدتك.",
    ],
}

_TRAILING = re.compile(r"[\s,，、。.!?！？;；:：¿¡]+$")


@dataclass(frozen=True)
class Case:
    text: str
    language: str  # the language the sentence is in

    @property
    def bucket(self) -> tuple[int, int]:
        return next(b for b in BUCKETS if b[0] <= len(self.text) <= b[1])


def _prefix(sentence: str, length: int, unspaced: bool) -> str:
    if unspaced:
        return _TRAILING.sub("", sentence[:length])
    cut = ""
    for match in re.finditer(r"\S+", sentence):
        if match.end() > length:
            break
        cut = sentence[:match.end()]
    return _TRAILING.sub("", cut)


def build_cases() -> list[Case]:
    cases: list[Case] = []
    for language, sentences in SENTENCES.items():
        seen: set[str] = set()
        for sentence in sentences:
            for length in LENGTHS:
                text = _prefix(sentence, length, language in UNSPACED)
                if text and len(text) <= 20 and text not in seen and any(ch.isalpha() for ch in text):
                    seen.add(text)
                    cases.append(Case(text, language))
    return cases


def is_correct(case: Case, predicted: str | None) -> bool:
    """zt input whose characters are the same in both scripts may rightly read as zh."""
    if case.language == "zt" and predicted == "zh":
        from mtserve.text.chinese import to_simplified

        return to_simplified(case.text) == case.text
    return predicted == case.language
