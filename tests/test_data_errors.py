"""Every error case of the data issue: one clear sentence naming the file (and line), nothing lost."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from cotk_repro import data
from cotk_repro.errors import CotkError

LINES = ["the cat sat on the mat .", "the dog sat on the log .", "a cat and a dog ."]


def lm_folder(root: Path, **override: str | bytes | None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    files = {"train.txt": "\n".join(LINES * 4) + "\n", "dev.txt": LINES[0] + "\n", "test.txt": LINES[1] + "\n"}
    files.update(override)
    for name, content in files.items():
        if content is None:
            continue
        path = root / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return root


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def raises(folder: Path, loader: str = "language-generation", **options) -> str:
    before = snapshot(folder) if folder.is_dir() else None
    with pytest.raises(CotkError) as info:
        data.load(loader, folder, **options)
    message = str(info.value)
    assert "\n" not in message.strip()
    if before is not None:
        assert snapshot(folder) == before  # bad input loses nothing
    return message


def test_missing_split_lists_names_looked_for(tmp_path):
    folder = lm_folder(tmp_path / "d", **{"dev.txt": None})
    msg = raises(folder)
    assert str(folder) in msg and "dev" in msg
    assert "dev.txt" in msg and "PREFIX_dev.txt" in msg


def test_missing_folder(tmp_path):
    msg = raises(tmp_path / "nope")
    assert "nope" in msg and "does not exist" in msg


def test_empty_split_names_file(tmp_path):
    folder = lm_folder(tmp_path / "d", **{"test.txt": "\n  \n\n"})
    msg = raises(folder)
    assert str(folder / "test.txt") in msg and "empty" in msg


def test_not_utf8_names_file_and_line(tmp_path):
    folder = lm_folder(tmp_path / "d", **{"train.txt": b"fine line\nsecond line\ncaf\xe9 latin-1\n"})
    msg = raises(folder)
    assert str(folder / "train.txt") in msg and "line 3" in msg and "UTF-8" in msg


def test_jsonl_invalid_json_names_file_and_line(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    good = json.dumps({"session": ["hi there .", "hello ."]})
    for split in ("train", "dev", "test"):
        (folder / f"{split}.jsonl").write_text(good + "\n", encoding="utf-8")
    (folder / "dev.jsonl").write_text(good + "\n" + good + '\n{"session": ["oops"\n', encoding="utf-8")
    msg = raises(folder, "multi-turn-dialog", min_frequent_vocab_times=1)
    assert str(folder / "dev.jsonl") in msg and "line 3" in msg and "not valid JSON" in msg


def test_jsonl_missing_field_names_file_line_and_field(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    pair = json.dumps({"post": "hi .", "response": "hello ."})
    for split in ("train", "dev", "test"):
        (folder / f"{split}.jsonl").write_text(pair + "\n", encoding="utf-8")
    (folder / "test.jsonl").write_text(pair + "\n" + json.dumps({"post": "only a post"}) + "\n", encoding="utf-8")
    msg = raises(folder, "single-turn-dialog", min_frequent_vocab_times=1)
    assert str(folder / "test.jsonl") in msg and "line 2" in msg and "'response'" in msg


def test_jsonl_wrong_field_type(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    good = json.dumps({"session": ["a b .", "c d ."]})
    for split in ("train", "dev", "test"):
        (folder / f"{split}.jsonl").write_text(good + "\n", encoding="utf-8")
    (folder / "train.jsonl").write_text(json.dumps({"session": "not a list"}) + "\n", encoding="utf-8")
    msg = raises(folder, "multi-turn-dialog", min_frequent_vocab_times=1)
    assert str(folder / "train.jsonl") in msg and "line 1" in msg and "session" in msg


def test_unknown_tokenizer_lists_registered(tmp_path):
    msg = raises(lm_folder(tmp_path / "d"), tokenizer="bpe")
    assert "'bpe'" in msg and "nltk" in msg and "space" in msg and "punkt" in msg


def test_unknown_loader_lists_registered(tmp_path):
    msg = raises(lm_folder(tmp_path / "d"), loader="translation")
    assert "'translation'" in msg
    for name in ("language-generation", "single-turn-dialog", "multi-turn-dialog"):
        assert name in msg


def test_threshold_leaving_frequent_vocab_empty(tmp_path):
    msg = raises(lm_folder(tmp_path / "d"), min_frequent_vocab_times=1000)
    assert "min_frequent_vocab_times=1000" in msg and "empty" in msg
    most = Counter(t for line in LINES * 4 for t in line.split()).most_common(1)[0][1]
    assert f"seen {most} times" in msg  # the most frequent training token


@pytest.mark.parametrize(
    "options, needle",
    [
        ({"min_frequent_vocab_times": -1}, "min_frequent_vocab_times"),
        ({"min_rare_vocab_times": 1.5}, "min_rare_vocab_times"),
        ({"max_sent_length": 0}, "max_sent_length"),
        ({"vocab_size": 5}, "no option 'vocab_size'"),
        ({"splits": ["dev", "test"]}, "'train'"),
    ],
)
def test_bad_options(tmp_path, options, needle):
    assert needle in raises(lm_folder(tmp_path / "d"), **options)


def test_post_response_line_count_mismatch(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    for split in ("train", "dev", "test"):
        (folder / f"{split}.post").write_text("hi .\nhow are you ?\n", encoding="utf-8")
        (folder / f"{split}.response").write_text("hello .\nfine .\n", encoding="utf-8")
    (folder / "dev.response").write_text("hello .\nfine .\nextra line .\n", encoding="utf-8")
    msg = raises(folder, "single-turn-dialog", min_frequent_vocab_times=1)
    assert str(folder / "dev.post") in msg and str(folder / "dev.response") in msg and "3" in msg


def test_post_without_response(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "train.post").write_text("hi .\n", encoding="utf-8")
    msg = raises(folder, "single-turn-dialog")
    assert str(folder / "train.response") in msg and "missing" in msg


def test_cli_error_is_one_sentence_without_traceback(tmp_path, cli):
    folder = lm_folder(tmp_path / "d", **{"test.txt": b"\xff\xfd bad\n"})  # not UTF-8 (FF FE: UTF-16, named so)
    res = cli("data", "hashes", str(folder))
    assert res.returncode == 2, res
    assert "Traceback" not in res.stderr
    assert str(folder / "test.txt") in res.stderr and "line 1" in res.stderr
    assert res.stdout == ""


def test_cli_splits_option_for_a_folder_without_dev(tmp_path, cli):
    import json

    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "train.txt").write_text("a b c\na b\nb c\n", encoding="utf-8")
    (folder / "test.txt").write_text("a c\n", encoding="utf-8")
    res = cli("data", "hashes", str(folder), "--min-frequent-vocab-times", "1")
    assert res.returncode == 2 and "has no dev split" in res.stderr and "dev.txt" in res.stderr
    res = cli("data", "hashes", str(folder), "--min-frequent-vocab-times", "1", "--splits", "train,test", "--json")
    assert res.returncode == 0, res
    summary = json.loads(res.stdout)
    assert {k: v["samples"] for k, v in summary["splits"].items()} == {"train": 3, "test": 1}
    res = cli("data", "hashes", str(folder), "--splits", "dev,test")
    assert res.returncode == 2 and "including 'train'" in res.stderr


# -- the newcomer's folder layouts (issue 12) ------------------------------------------------------------


def test_prefixed_split_files_load_as_the_plain_names(tmp_path, cli):
    """Texygen's coco_train.txt/coco_test.txt: PREFIX_split.txt is accepted and hashes like split.txt."""
    import json

    lines = {"train": "a b c\na b\nb c\n", "test": "a c\n"}
    plain, prefixed = tmp_path / "plain", tmp_path / "prefixed"
    for folder, fmt in ((plain, "{}.txt"), (prefixed, "coco_{}.txt")):
        folder.mkdir()
        for split, text in lines.items():
            (folder / fmt.format(split)).write_text(text, encoding="utf-8")
    args = ("--min-frequent-vocab-times", "1", "--splits", "train,test", "--json")
    a, b = (cli("data", "hashes", str(f), *args) for f in (plain, prefixed))
    assert a.returncode == 0 and b.returncode == 0, (a, b)
    assert json.loads(a.stdout)["hash_codes"] == json.loads(b.stdout)["hash_codes"]
    assert json.loads(b.stdout)["splits"]["train"]["files"] == [str(prefixed / "coco_train.txt")]
    # without --splits: the dev split is missing, and the message names exactly what was looked for
    res = cli("data", "hashes", str(prefixed))
    assert res.returncode == 2
    assert (
        "has no dev split: looked for dev.txt or PREFIX_dev.txt" in res.stderr and "--splits train,test" in res.stderr
    )
    assert _max_paren_depth(res.stderr) <= 1
    # two candidates for one split: say which, never pick one silently
    (prefixed / "other_train.txt").write_text("x\n", encoding="utf-8")
    res = cli("data", "hashes", str(prefixed), *args)
    assert res.returncode == 2 and "coco_train.txt, other_train.txt" in res.stderr


def _max_paren_depth(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        deepest = max(deepest, depth)
    return deepest


def test_missing_train_split_does_not_suggest_splits(tmp_path, cli):
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "test.txt").write_text("a c\n", encoding="utf-8")
    res = cli("data", "hashes", str(folder), "--splits", "train,test")
    assert res.returncode == 2 and "has no train split" in res.stderr and "--splits" not in res.stderr


@pytest.mark.parametrize(
    "files, loader",
    [
        ({"train.post": "hi\n", "train.response": "hello\n"}, "single-turn-dialog"),
        ({"opensub_pair_train.post": "hi\n", "opensub_pair_train.response": "hello\n"}, "single-turn-dialog"),
        ({"train.jsonl": '{"post": "hi", "response": "hello"}\n'}, "single-turn-dialog"),
        ({"train.jsonl": '{"session": ["hi", "hello", "bye"]}\n'}, "multi-turn-dialog"),
    ],
)
def test_dialog_folder_without_loader_names_the_loader(tmp_path, cli, files, loader):
    folder = tmp_path / "d"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    res = cli("data", "hashes", str(folder), "--splits", "train")
    assert res.returncode == 2 and "has no train split" in res.stderr
    assert f"--loader {loader}" in res.stderr and _max_paren_depth(res.stderr) <= 1, res
    # and with that loader it loads
    res = cli(
        "data",
        "hashes",
        str(folder),
        "--splits",
        "train",
        "--loader",
        loader,
        "--min-frequent-vocab-times",
        "1",
        "--reference-split",
        "train",
    )
    assert res.returncode == 0, res


def test_utf16_nul_and_cr_only_files_are_one_sentence(tmp_path, cli):
    """The one reading of every input (docs/inputs.md) in the loaders: UTF-16 named, NUL with line and column,
    CR-only line ends refused."""
    cases = [
        ("a b\nc d\n".encode("utf-16"), "is UTF-16 text"),
        (b"a b\nc\x00d\n", "line 2 holds a NUL character"),
        (b"a b\rc d\r", "carriage return (CR) only"),
    ]
    for i, (content, message) in enumerate(cases):
        folder = lm_folder(tmp_path / f"d{i}", **{"test.txt": content})
        res = cli("data", "hashes", str(folder))
        assert res.returncode == 2 and message in res.stderr and "Traceback" not in res.stderr, res
