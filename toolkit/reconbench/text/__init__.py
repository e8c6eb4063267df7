"""The text modality: the SoK's Appendix B study (Complete and Vec2Text; BLEU, ROUGE-L, similarity).

The image pipeline's shape, for text (one concern per module; data flows one way):

    tracks.py      the text-track registry (registry/text_tracks.json): pinned corpora and target models
    items.py       TextItem / TextSet: (id, text) records and their content hash
    corpus.py      the embedded `lee-news` corpus (gensim's Lee news background corpus) and its splits
    files.py       loading a track's splits and its two target models (embedded or from the Hub), hash-checked
    embedding.py   sentence embedders (mean pooling); minilm.py: all-MiniLM-L6-v2, pinned
    knowledge.py   the threat-model view an attack gets (prompts or leaked embeddings, counted queries)
    attacks/       Complete (prompting with the first words) and Vec2Text (embedding inversion)
    metrics/       per-sample BLEU, ROUGE-L, embedding similarity, exact match
    results.py     the text result: signed payload + reconstructions.jsonl
    evaluation.py  track -> knowledge -> attack -> metrics -> signed result folder

A text track has up to two target models, as in the SoK: a `generator` (a causal language model,
attacked by Complete) and an `embedder` (a sentence-embedding model, attacked by Vec2Text). Each
reconstruction answers one target text (same id) and is scored against that target only.
"""
