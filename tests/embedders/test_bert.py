"""The packaged MiniLM embeds in plain torch (no sentence-transformers import at a scan's start): its vectors must
be sentence-transformers' own, and any folder it does not read exactly must go to sentence-transformers."""

from __future__ import annotations

import json
import shutil

import numpy as np

from vdbguard.embedders import Embedder
from vdbguard.embedders.bert import SentenceEncoder

TEXTS = [
    "Patient Jane Roe, MRN 4417, was seen on 3 March.",
    "",
    "   leading and trailing spaces are stripped   ",
    "Ünïcödé naïve café, 東京 and emoji 🙂",
    "word " * 400,  # past max_seq_length: cut at 256 tokens
    "short",
]


def test_the_plain_torch_encoder_gives_sentence_transformers_vectors(embedder) -> None:
    mine = embedder.encode(TEXTS)
    theirs = embedder.model.encode(TEXTS, convert_to_numpy=True, normalize_embeddings=True)
    assert isinstance(SentenceEncoder.of(embedder.path), SentenceEncoder)
    assert mine.shape == (len(TEXTS), 384) and mine.dtype == np.float32
    assert float(np.abs(mine - theirs).max()) < 1e-5


def test_a_folder_with_another_module_goes_to_sentence_transformers(local_embedder) -> None:
    """MiniLM plus a projection: read as plain BERT, it would give 384 numbers instead of 128."""
    assert SentenceEncoder.of(local_embedder.path) is None
    assert local_embedder.encode(["Jane Roe"]).shape == (1, 128)


def test_other_pooling_goes_to_sentence_transformers(embedder, tmp_path) -> None:
    folder = tmp_path / "cls-pooled"
    shutil.copytree(embedder.path, folder)
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    pooling.write_text(json.dumps({**config, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}))
    assert SentenceEncoder.of(folder) is None
    vectors = Embedder(str(folder)).encode(["Jane Roe"])
    cls = embedder.model.encode(["Jane Roe"], output_value="token_embeddings")[0][0].numpy()
    assert np.allclose(vectors[0], cls / np.linalg.norm(cls), atol=1e-5)


def test_texts_are_batched_with_texts_of_like_length_and_embed_as_alone(embedder) -> None:
    """A batch is padded to its longest text: a page of short texts of many lengths must not be mostly padding."""
    encoder = SentenceEncoder.of(embedder.path)
    model, shapes = encoder.model, []
    encoder.model = lambda ids, mask: shapes.append(tuple(ids.shape)) or model(ids, mask)
    texts = [("word " * words).strip() for words in (3, 40, 4, 41, 5, 90)]  # each word a token, with [CLS], [SEP]
    together = encoder.encode(texts, batch_size=64)
    assert shapes == [(1, 92), (2, 43), (3, 7)]
    alone = np.concatenate([encoder.encode([text]) for text in texts])
    assert float(np.abs(together - alone).max()) < 1e-5
