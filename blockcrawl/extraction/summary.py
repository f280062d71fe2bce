"""Key sentences of an article (NFaS, seed 004: keywords from lexical chains).

Lexical chains without a thesaurus, so that no language needs a resource: a chain is the set of
occurrences of words sharing their first CHAIN_PREFIX letters ("elect", "election", "elected" are
one chain), words of under 4 letters, numbers and a short multi-language stop list left out.
Chain strength is Barzilay & Elhadad's length x homogeneity, length - distinct members: a word
said once makes no chain, a topic repeated in many forms makes a strong one; a chain found in
most sentences (a stop word the list missed) is dropped. A sentence scores the strengths of the
chains it holds over the square root of its length (a long sentence is not a better one), the
article's first sentences a little more (news leads with its summary). The best is picked, the
chains it covers count half from then on (no two sentences saying the same), and so on; the
picks are given in text order.

Bounded: the first MAX_SENTENCES sentences of the first MAX_CHARS characters are scored, one pass
each for chains and scores, and max_sentences greedy rounds over them: O(n) in the text read.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from itertools import chain

MAX_CHARS = 100_000
MAX_SENTENCES = 200
MAX_SUMMARY = 1200  # characters of the summary
CHAIN_PREFIX = 5
MIN_WORDS = 6  # a shorter "sentence" is a heading, caption or label
MAX_SHARE = 0.6  # a chain in more of the sentences than this is no topic
LEAD = (1.3, 1.15, 1.05)  # weights of the first three sentences

_SENT_END = re.compile(r"(?<=[.!?…。！？])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[^\s\da-z])")
_WORD = re.compile(r"[^\W\d_]{4,}")
STOP = frozenset("""
that this with from have were been they their there which would could about said will also more than
when what into other some after over such only just like your them then these those while where because
being does here very most many much says told last first even well still back since before under
between both each through against during without within should must might make made take know year
years time times people according percent dass nicht eine einer einen sich auch wird werden sind oder
aber nach wenn noch über dans pour avec sont cette mais plus comme elle nous vous leur para como pero esta
este más sobre entre también desde donde porque della sono delle questo anche nella""".split())


def sentences(text: str) -> list[str]:
    """The sentences of text (paragraph lines split at sentence ends), at most MAX_SENTENCES,
    of MIN_WORDS words or more."""
    out: list[str] = []
    for line in text[:MAX_CHARS].split("\n"):
        line = line.strip()
        if not line:
            continue
        for s in _SENT_END.split(line):
            s = " ".join(s.split())
            if s.count(" ") + 1 >= MIN_WORDS:
                out.append(s)
                if len(out) >= MAX_SENTENCES:
                    return out
    return out


def summarize(text: str, max_sentences: int = 3) -> str:
    """The max_sentences key sentences of text, in text order, joined by a space ("" if the
    text has no sentence).

    >>> summarize("The weather was mild on Tuesday morning. Solar panels convert sunlight into power. "
    ...           "Solar power is cheaper than coal power now. Birds sang all day long in the park.", 2)
    'Solar panels convert sunlight into power. Solar power is cheaper than coal power now.'
    """
    sents = sentences(text)
    if not sents or max_sentences < 1:
        return ""
    if len(sents) <= max_sentences:
        return " ".join(sents)[:MAX_SUMMARY]
    # chains: prefix -> occurrences, distinct members, sentences holding it (counted by C loops:
    # a set of members per chain cost a third of the summary)
    # each sentence's chains in the order its words give them (a dict, not a set): the scores are
    # float sums and the picks subtract in this order, so a set's hash order made the summary of a
    # page differ between processes (1 of 400 random texts over 6 hash seeds; one msv page)
    where: list[dict[str, None]] = []
    lengths: list[int] = []
    every: list[str] = []
    for s in sents:
        words = [w for w in _WORD.findall(s.lower()) if w not in STOP]
        where.append(dict.fromkeys([w[:CHAIN_PREFIX] for w in words]))
        lengths.append(max(len(words), 4))
        every += words
    occ = Counter(w[:CHAIN_PREFIX] for w in every)
    members = Counter(w[:CHAIN_PREFIX] for w in set(every))
    df = Counter(chain.from_iterable(where))
    cap = MAX_SHARE * len(sents)
    strength = {k: float(n - members[k]) for k, n in occ.items()
                if n - members[k] > 0 and (df[k] <= cap or len(sents) < 5)}
    # scores once, then after each pick only the sentences sharing its chains change (an index
    # from chain to sentences): O(total words) in all, not rounds x sentences x words
    norm = [(LEAD[i] if i < len(LEAD) else 1.0) / math.sqrt(lengths[i]) for i in range(len(sents))]
    holders: dict[str, list[int]] = {}
    for i, keys in enumerate(where):
        for k in keys:
            if k in strength:
                holders.setdefault(k, []).append(i)
    score = [sum(strength.get(k, 0.0) for k in keys) * norm[i] for i, keys in enumerate(where)]
    picked: list[int] = []
    for _ in range(min(max_sentences, len(sents))):
        best = max(range(len(score)), key=score.__getitem__)
        if score[best] <= 0.0:
            break
        picked.append(best)
        score[best] = -1.0
        for k in where[best]:
            if k in strength:
                half = strength[k] * 0.5
                strength[k] = half
                for j in holders[k]:
                    if score[j] > 0.0:
                        score[j] -= half * norm[j]
    if not picked:
        picked = list(range(max_sentences))  # no word repeats: the lead
    out = ""
    for i in sorted(picked):
        nxt = (out + " " + sents[i]) if out else sents[i]
        if len(nxt) > MAX_SUMMARY and out:
            break
        out = nxt
    return out[:MAX_SUMMARY]
