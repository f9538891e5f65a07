"""A record's results for the places results are shared: Hugging Face model-index metadata, plain JSON.

The model-index is built with huggingface_hub's own ``ModelCardData`` and ``EvalResult`` (never hand-written
YAML): one ``EvalResult`` per metric, its comparability hash as the entry's ``metric_config`` and, in its
``metric_args``, the hash, the readable signature and the record id, so a reader of the card can tell which
numbers may be compared. ``update_card`` replaces the metadata of an existing model card (``README.md``) in
place and keeps its text.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from huggingface_hub import EvalResult, ModelCardData

from ..errors import CotkError
from .view import RecordView

#: cotk-repro task names -> Hugging Face task types (the hub's pipeline tags); others map to text-generation
HF_TASKS = {
    "language-generation": "text-generation",
    "language-modeling": "text-generation",
    "single-turn-dialog": "text-generation",
    "multi-turn-dialog": "text-generation",
    "summarization": "summarization",
    "translation": "translation",
    "machine-translation": "translation",
}


#: what an exported result of an unpinned system (an endpoint's model) says beside its value
UNPINNED = {"pinned": False}


def results_document(record: dict[str, Any], signature: str | None = None) -> dict[str, Any]:
    """``--format json``: the record's id, project and results (value, hash, signature) and its SSH signature."""
    view = RecordView.of(record)
    project = view.project
    return {
        "schema": "cotk-repro/results-export",
        "schema_version": 1,
        "record_id": view.id,
        "project": {"name": project.name, "task": project.task, "dataset": project.dataset},
        "commit": view.code.commit,
        "dirty": bool(view.code.dirty),
        "results": {
            name: {
                "value": r.value,
                "hash": r.hash,
                "signature": r.signature,
                **({} if view.pinned(name) else UNPINNED),
            }
            for name, r in sorted(view.results.items())
        },
        "record_signature": signature,
    }


def _eval_results(record: dict[str, Any]) -> list[EvalResult]:
    from huggingface_hub import EvalResult

    view = RecordView.of(record)
    task = view.project.task or "language-generation"
    dataset = view.project.dataset or "unknown"
    out = []
    for name, r in sorted(view.results.items()):
        args = {"hash": r.hash, "signature": r.signature, "record": view.id}
        out.append(
            EvalResult(
                task_type=HF_TASKS.get(task, "text-generation"),
                task_name=task,
                dataset_type=dataset,
                dataset_name=dataset,
                metric_type=r.metric or name,
                metric_name=name,
                metric_value=r.value,
                metric_config=r.hash or "unverifiable",
                metric_args={k: v for k, v in args.items() if v is not None},
                verified=False,
            )
        )
    if not out:
        raise CotkError(f"record {view.id} has no results to export")
    return out


def model_card_data(record: dict[str, Any], model_name: str | None = None) -> ModelCardData:
    """The record as huggingface_hub ``ModelCardData`` with its ``model-index``."""
    from huggingface_hub import ModelCardData

    view = RecordView.of(record)
    name = model_name or view.project.name or (view.id or "model").removeprefix("sha256:")[:12]
    return ModelCardData(model_name=name, eval_results=_eval_results(record))


def model_index_yaml(record: dict[str, Any], model_name: str | None = None) -> str:
    """The model-index metadata as YAML (``model-index:`` at the top level)."""
    yaml: str = model_card_data(record, model_name).to_yaml()
    return yaml + "\n"


def update_card(card_path: Path, record: dict[str, Any], model_name: str | None = None) -> None:
    """Set the model-index of the model card at ``card_path`` (created when missing), keeping its other
    metadata and its text."""
    from huggingface_hub import ModelCard
    from huggingface_hub.repocard import REGEX_YAML_BLOCK

    from ..core.fileio import atomic_write

    text = None
    if card_path.exists():
        try:
            text = card_path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise CotkError(f"cannot read the model card {card_path}: {exc}") from None
    if text is None or not REGEX_YAML_BLOCK.search(text):
        # a new card, or one without metadata: give it a metadata block first (an empty "---\n---" is no block to
        # huggingface_hub, which then logs "metadata block was not found" and keeps the dashes as the card's text)
        body = text if text is not None else _new_card_text(record, model_name)
        text = f"---\n{model_card_data(record, model_name).to_yaml()}\n---\n" + body
    try:
        card = ModelCard(text, ignore_metadata_errors=True)
    except ValueError as exc:
        raise CotkError(f"cannot read the model card {card_path}: {exc}") from None
    fresh = model_card_data(record, model_name or card.data.get("model_name"))
    card.data.model_name = fresh.model_name  # type: ignore[attr-defined]  # CardData keeps any metadata key as an attribute
    card.data.eval_results = fresh.eval_results  # type: ignore[attr-defined]
    atomic_write(card_path, str(card))


def _new_card_text(record: dict[str, Any], model_name: str | None) -> str:
    """The text of a card ``export --card`` creates: a title and where its numbers come from."""
    view = RecordView.of(record)
    name = model_card_data(record, model_name).model_name
    return (
        f"\n# {name}\n\nEvaluation results recorded by cotk-repro (record `{view.id}`); each result's "
        "`metric_args` holds its comparability hash and signature.\n"
    )
