"""The ``cotk-repro compare`` config: TOML, validated strictly, errors naming file and line.

See ``docs/compare.md`` for the format. Paths in the config are relative to the
folder of the config file. :func:`load_config` checks everything that can be
checked before any metric runs: unknown keys and wrong types, registered metric
and generator names and their options, folders and files, a sample file for
every (system, dataset) pair, and equal line counts of gold and samples when a
metric compares them line by line.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

from ..core.tomlpos import key_lines, line_of
from ..errors import ConfigError, CotkError
from ..first_party import missing_sentence
from ..generation import GeneratorError
from ..metrics.facts import facts_of
from ..text.textfmt import TextFileError, TextFormat, count_documents, count_lines, inputs_sha256
from .schema import validate_shape

#: how a metric uses the gold references (a metric's own facts choose; a [[metric]] may override):
#: ``aligned`` one reference list per sample line; ``set`` the whole gold set, not aligned; ``none`` none.
REFERENCE_MODES = ("aligned", "set", "none")

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


@dataclass
class DatasetSpec:
    """One `[[dataset]]` of a compare config: gold file, text formats, samples folder, inputs."""

    name: str
    index: int
    gold: Path
    gold_format: TextFormat
    sample_format: TextFormat
    samples_dir: Path | None
    inputs: Path | None
    gold_lines: int = 0
    samples_given: bool = False
    #: text format of the generator inputs (documents); default: the dataset's sample format
    inputs_format: TextFormat | None = None
    #: the system every other is tested against on this dataset (paired bootstrap, Holm-Bonferroni per column)
    baseline: str | None = None


@dataclass
class MetricSpec:
    """One `[[metric]]` of a compare config: metric name, options, references, direction, cost."""

    label: str
    name: str
    index: int
    options: dict[str, Any]
    references: str
    higher_is_better: bool
    keys: tuple[str, ...] | None = None
    #: rough relative cost per sample from the metric's facts (the costliest tasks are started first)
    cost: float = 1.0
    label_given: bool = False
    version: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    def column(self, key: str, n_keys: int) -> str:
        """The report column for one result key of this metric."""
        if "{key}" in self.label:
            return self.label.replace("{key}", key)
        if n_keys == 1:
            return self.label
        return f"{self.label}:{key}" if self.label_given else key


@dataclass
class SystemSpec:
    """One system of a compare config: sample files per dataset, or a generator and its settings."""

    name: str
    index: int | None  # position among [[system]] tables; None when found in samples/ folders
    samples: dict[str, Path] = field(default_factory=dict)  # dataset -> file (file systems)
    formats: dict[str, TextFormat] = field(default_factory=dict)  # dataset -> sample format
    generator: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    datasets: tuple[str, ...] = ()
    #: dataset -> config key path where this system's samples for it are defined (for error lines)
    where: dict[str, tuple] = field(default_factory=dict)
    #: the prompt protocol file that renders a generator system's inputs, and its hash (joins every metric's)
    protocol: Path | None = None
    protocol_sha256: str | None = None


@dataclass
class CompareConfig:
    """A parsed, checked compare config: datasets, systems, metrics and report settings."""

    path: Path
    display: str
    root: Path
    lines: dict[tuple, int]
    title: str
    out: Path
    jobs: int | None
    cache: Path
    charts: bool
    html: bool
    datasets: list[DatasetSpec]
    systems: list[SystemSpec]
    metrics: list[MetricSpec]
    #: bootstrap intervals for every cell whose metric resamples (``[report] intervals``, or a dataset's
    #: ``baseline``): :mod:`cotk_repro.compare.intervals`
    intervals: bool = False

    def error(self, path: tuple, message: str) -> ConfigError:
        return config_error(self.display, self.lines, path, message)

    def rel(self, p: Path) -> str:
        """A path for reports: relative to the config folder, never absolute home paths."""
        import os

        try:
            return Path(os.path.relpath(p, self.root)).as_posix()
        except ValueError:  # another drive
            return Path(p).name


def config_error(display: str, lines: dict[tuple, int], path: tuple, message: str) -> ConfigError:
    """Return a ConfigError whose message starts with the config file and line of key path `path`."""
    line = line_of(lines, path)
    where = f"{display}:{line}" if line else display
    return ConfigError(f"{where}: {message}")


def _dotted(path: tuple) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _check_name(value: str, what: str, path: tuple, fail) -> None:
    if not _NAME_RE.match(value):
        raise fail(path, f"{what} name {value!r} may hold only letters, digits and . _ + - (it names report files)")


def load_config(
    path: str | Path, *, out: str | Path | None = None, jobs: int | None = None, check_files: bool = True
) -> CompareConfig:
    """Read, validate and resolve a compare config. Raises :class:`ConfigError` naming file and line."""
    path = Path(path)
    display = str(path)
    if path.is_dir():
        inside = sorted(p.name for p in path.glob("*.toml"))
        raise ConfigError(
            f"{display} is a folder; give the compare config file (TOML) itself"
            + (f", e.g. {path / inside[0]}" if inside else "")
        )
    try:
        text = path.read_text(encoding="utf-8-sig")  # a leading BOM (Windows editors) is not part of the TOML
    except FileNotFoundError:
        raise ConfigError(f"config file {display} does not exist") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{display} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {display}: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{display}: invalid TOML: {exc}") from None
    lines = key_lines(text)

    def fail(p: tuple, message: str) -> ConfigError:
        return config_error(display, lines, p, message)

    validate_shape(data, fail)  # unknown keys and types (pydantic models in .schema)
    root = path.resolve().parent

    def resolve(p: str) -> Path:
        return (root / p).resolve() if not Path(p).is_absolute() else Path(p)

    _expand_paths(data, fail)
    report = data.get("report", {})
    if "jobs" in report and report["jobs"] < 1:
        raise fail(("report", "jobs"), "'report.jobs' must be at least 1")

    # -- formats -------------------------------------------------------------
    default_fmt = _make_format(data.get("format", {}), None, ("format",), fail)
    named = {name: _make_format(d, default_fmt, ("formats", name), fail) for name, d in data.get("formats", {}).items()}

    def fmt_of(value: Any, p: tuple, base: TextFormat) -> TextFormat:
        if value is None:
            return base
        if isinstance(value, str):
            if value not in named:
                known = ", ".join(sorted(named)) or "none defined"
                raise fail(p, f"unknown format {value!r} (defined in [formats]: {known})")
            return named[value]
        return _make_format(value, base, p, fail)

    # -- datasets ------------------------------------------------------------
    raw_datasets = data.get("dataset", [])
    if not raw_datasets:
        raise fail((), "no [[dataset]] is defined")
    datasets: list[DatasetSpec] = []
    seen: dict[str, int] = {}
    for i, d in enumerate(raw_datasets):
        p = ("dataset", i)
        name = d.get("name")
        if name is None:
            raise fail(p, "every [[dataset]] needs a 'name'")
        _check_name(name, "dataset", p + ("name",), fail)
        if name in seen:
            raise fail(p + ("name",), f"dataset {name!r} is defined twice")
        seen[name] = i
        folder = resolve(d["path"]) if "path" in d else None
        if folder is not None and check_files and not folder.is_dir():
            raise fail(p + ("path",), f"dataset folder {d['path']} does not exist")
        if "gold" in d:
            gold = resolve(d["gold"])
            if check_files and not gold.is_file():
                raise fail(p + ("gold",), f"gold file {d['gold']} does not exist")
        elif folder is not None:
            gold = _find_gold(folder, p + ("path",), fail) if check_files else folder / "gold" / "refs.txt"
        else:
            raise fail(p, f"dataset {name!r} needs a 'path' (a folder with gold/ and samples/) or a 'gold' file")
        if "samples" in d:
            samples_dir = resolve(d["samples"])
            if check_files and not samples_dir.is_dir():
                raise fail(p + ("samples",), f"samples folder {d['samples']} does not exist")
        elif folder is not None:
            samples_dir = folder / "samples"
            if check_files and not samples_dir.is_dir():
                samples_dir = None
        else:
            samples_dir = None
        inputs = None
        if "inputs" in d:  # a file (one document per line) or a folder (one *.txt file per document)
            inputs = resolve(d["inputs"])
            if check_files and not (inputs.is_file() or inputs.is_dir()):
                raise fail(p + ("inputs",), f"inputs file or folder {d['inputs']} does not exist")
        elif folder is not None and (folder / "inputs.txt").is_file():
            inputs = folder / "inputs.txt"
        elif folder is not None and (folder / "inputs").is_dir():
            inputs = folder / "inputs"
        sample_fmt = fmt_of(d.get("format"), p + ("format",), default_fmt)
        gold_fmt = fmt_of(d.get("gold_format"), p + ("gold_format",), sample_fmt)
        inputs_fmt = fmt_of(d.get("inputs_format"), p + ("inputs_format",), sample_fmt)
        datasets.append(
            DatasetSpec(
                name,
                i,
                gold,
                gold_fmt,
                sample_fmt,
                samples_dir,
                inputs,
                samples_given="samples" in d,
                inputs_format=inputs_fmt,
                baseline=d.get("baseline"),
            )
        )
    by_name = {ds.name: ds for ds in datasets}

    # -- metrics -------------------------------------------------------------
    metrics = _load_metrics(data.get("metric", []), fail)

    # -- systems -------------------------------------------------------------
    systems = _load_systems(data.get("system", []), datasets, by_name, fmt_of, resolve, fail, check_files)

    for ds in datasets:
        if ds.baseline is not None and not any(
            sysm.name == ds.baseline and ds.name in sysm.datasets for sysm in systems
        ):
            raise fail(
                ("dataset", ds.index, "baseline"),
                f"the baseline {ds.baseline!r} of dataset {ds.name!r} is not one of its systems "
                f"({', '.join(s.name for s in systems if ds.name in s.datasets) or 'none'})",
            )

    # -- line counts ---------------------------------------------------------
    if check_files:
        aligned = [m for m in metrics if m.references == "aligned"]
        for ds in datasets:
            try:
                ds.gold_lines = count_lines(ds.gold)
            except TextFileError as exc:
                raise fail(("dataset", ds.index), exc.message) from None
            if ds.gold_lines == 0 and any(m.references != "none" for m in metrics):
                raise fail(("dataset", ds.index), f"the gold file of dataset {ds.name!r} is empty")
        for sysm in systems:
            for dname in sysm.datasets:
                ds = by_name[dname]
                source = sysm.samples.get(dname) if sysm.generator is None else ds.inputs
                if source is None:
                    continue
                n = count_documents(source) if sysm.generator else count_lines(source)
                where = sysm.where.get(
                    dname, ("system", sysm.index) if sysm.index is not None else ("dataset", ds.index)
                )
                if n == 0:
                    raise fail(
                        where, f"system {sysm.name!r} has an empty file for dataset {dname!r}: {_rel(source, root)}"
                    )
                if aligned and n != ds.gold_lines:
                    what = "inputs" if sysm.generator else "samples"
                    raise fail(
                        where,
                        f"system {sysm.name!r} has {n} lines of {what} in {_rel(source, root)} but "
                        f"the gold file {_rel(ds.gold, root)} of dataset {dname!r} has "
                        f"{ds.gold_lines}; metric {aligned[0].label!r} compares them line by line",
                    )

    out_dir = Path(out) if out is not None else resolve(report.get("out", "reports"))
    return CompareConfig(
        path=path,
        display=display,
        root=root,
        lines=lines,
        title=report.get("title", path.stem),
        out=out_dir,
        jobs=jobs if jobs is not None else report.get("jobs"),
        cache=resolve(report.get("cache", ".cotk-repro/compare-cache")),
        charts=report.get("charts", True),
        html=report.get("html", True),
        datasets=datasets,
        systems=systems,
        metrics=metrics,
        intervals=report.get("intervals", False) or any(ds.baseline is not None for ds in datasets),
    )


_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_vars(value: str) -> str:
    """``${NAME}`` and ``${NAME:-default}`` in a path -> the environment variable's value (or the default).

    Raises KeyError(NAME) for an unset variable without a default.
    """
    import os

    def sub(m: re.Match) -> str:
        name, default = m.group(1), m.group(2)
        got = os.environ.get(name)
        if got:
            return got
        if default is None:
            raise KeyError(name)
        return default

    return _VAR_RE.sub(sub, value)


def _expand_paths(data: dict[str, Any], fail) -> None:
    """Expand environment variables in every path value of the config, in place."""

    def expand(container: dict, key: str, p: tuple) -> None:
        value = container.get(key)
        if isinstance(value, str) and "${" in value:
            try:
                container[key] = expand_vars(value)
            except KeyError as exc:
                raise fail(
                    p,
                    f"environment variable {exc.args[0]} in {value!r} is not set (give a default: ${{NAME:-default}})",
                ) from None

    report = data.get("report", {})
    for key in ("out", "cache"):
        expand(report, key, ("report", key))
    for i, d in enumerate(data.get("dataset", [])):
        for key in ("path", "gold", "samples", "inputs"):
            expand(d, key, ("dataset", i, key))
    for i, sysm in enumerate(data.get("system", [])):
        samples = sysm.get("samples")
        if isinstance(samples, dict):
            for key in list(samples):
                expand(samples, key, ("system", i, "samples", key))
        else:
            expand(sysm, "samples", ("system", i, "samples"))


def _rel(p: Path, root: Path) -> str:
    import os

    try:
        return Path(os.path.relpath(p, root)).as_posix()
    except ValueError:
        return str(p)


def _make_format(d: dict[str, Any], base: TextFormat | None, p: tuple, fail) -> TextFormat:
    if "strip_pattern" in d:
        try:
            re.compile(d["strip_pattern"])
        except re.error as exc:
            raise fail(p + ("strip_pattern",), f"'strip_pattern' is not a valid regular expression: {exc}") from None
    for key in ("sentence_separator", "reference_separator"):
        if d.get(key) == "":
            raise fail(p + (key,), f"'{key}' must not be empty")
    fmt = TextFormat.from_dict(d, base)
    if not fmt.tokenized and "tokenizer" in d:
        from ..plugins import refusal, registry

        try:
            known = registry("tokenizer")
        except CotkError as exc:
            raise fail(p + ("tokenizer",), exc.message) from None
        if fmt.tokenizer not in known:
            raise fail(
                p + ("tokenizer",),
                refusal("tokenizer", fmt.tokenizer)
                or f"unknown tokenizer {fmt.tokenizer!r}; registered: {', '.join(sorted(known)) or 'none'}",
            )
    return fmt


def _find_gold(folder: Path, p: tuple, fail) -> Path:
    gold_dir = folder / "gold"
    if not gold_dir.is_dir():
        raise fail(p, f"dataset folder {folder.name}/ has no gold/ folder (expected gold/refs.txt or gold/refs.jsonl)")
    for name in ("refs.txt", "refs.jsonl"):
        if (gold_dir / name).is_file():
            return gold_dir / name
    found = sorted(x for x in gold_dir.iterdir() if x.is_file() and x.suffix in (".txt", ".jsonl"))
    if len(found) == 1:
        return found[0]
    if not found:
        raise fail(p, f"{folder.name}/gold/ holds no refs.txt or refs.jsonl")
    raise fail(
        p,
        f"{folder.name}/gold/ holds several reference files ({', '.join(f.name for f in found)}); name one with 'gold'",
    )


def _load_metrics(raw: list[dict[str, Any]], fail) -> list[MetricSpec]:
    from ..plugins import refusal, registry

    if not raw:
        raise fail((), "no [[metric]] is defined")
    try:
        known = registry("metric")
    except CotkError as exc:
        raise fail(("metric",), exc.message) from None
    metrics: list[MetricSpec] = []
    labels: dict[str, int] = {}
    for i, m in enumerate(raw):
        p = ("metric", i)
        name = m.get("name")
        if name is None:
            raise fail(p, "every [[metric]] needs a 'name'")
        if name not in known:
            raise fail(
                p + ("name",),
                refusal("metric", name)
                or missing_sentence("metric", name)
                or f"unknown metric {name!r}; registered: {', '.join(sorted(known)) or 'none'}",
            )
        label = m.get("label", name)
        _check_name(label.replace("{key}", "k"), "metric label", p + ("label" if "label" in m else "name",), fail)
        if label in labels:
            raise fail(
                p + ("label" if "label" in m else "name",),
                f"metric label {label!r} is used twice; give each [[metric]] of the same name its own 'label'",
            )
        labels[label] = i
        refs = m.get("references")
        options = dict(m.get("options", {}))
        try:
            from ..metrics import check_option_names

            check_option_names(name, options)  # a misspelt option: the closest valid one and the full list
        except CotkError as exc:
            raise fail(p + ("options",), exc.message) from None
        try:
            # the registered factory itself (not get_metric, which rewords TypeErrors): the same object
            metric = known[name].obj(**options)
        except TypeError as exc:
            raise fail(p + ("options",), f"metric {name!r} rejected its options: {exc}") from None
        except CotkError as exc:
            raise fail(p + ("options",), f"metric {name!r}: {exc.message}") from None
        except Exception as exc:
            raise fail(p + ("options",), f"metric {name!r} could not be created: {type(exc).__name__}: {exc}") from None
        try:  # the metric's own facts (docs/metrics.md, "The metric contract"); the config may override them
            facts = facts_of(metric, name)
        except ValueError as exc:
            raise fail(p + ("name",), str(exc)) from None
        if refs is None:
            refs = facts.references
        if refs not in REFERENCE_MODES:
            raise fail(p + ("references",), f"'references' must be one of {', '.join(REFERENCE_MODES)}, got {refs!r}")
        hib = m.get("higher_is_better")
        if hib is None:
            hib = facts.higher_is_better
        settings = getattr(metric, "settings", None)
        metrics.append(
            MetricSpec(
                label=label,
                name=name,
                index=i,
                options=options,
                references=refs,
                higher_is_better=bool(hib),
                keys=tuple(m["keys"]) if "keys" in m else None,
                label_given="label" in m,
                cost=facts.cost,
                version=str(getattr(metric, "version", "")) or None,
                settings=dict(settings) if isinstance(settings, dict) else {},
            )
        )
    return metrics


def _load_systems(raw, datasets, by_name, fmt_of, resolve, fail, check_files) -> list[SystemSpec]:
    from ..plugins import refusal, registry

    all_names = tuple(ds.name for ds in datasets)
    systems: list[SystemSpec] = []
    if not raw:
        # discover: every samples/<system>.txt of every dataset; each system needs all datasets
        found: dict[str, dict[str, Path]] = {}
        for ds in datasets:
            if ds.samples_dir is None:
                continue
            for f in sorted(ds.samples_dir.glob("*.txt")):
                found.setdefault(f.stem, {})[ds.name] = f
        if not found:
            raise fail(("dataset", 0), "no system to compare: no samples/<system>.txt in any dataset and no [[system]]")
        for name in sorted(found):
            for ds in datasets:
                if ds.name not in found[name]:
                    where = "samples/" if ds.samples_dir is None else _rel(ds.samples_dir, resolve("."))
                    raise fail(
                        ("dataset", ds.index, "samples" if ds.samples_given else "path"),
                        f"dataset {ds.name!r} has no sample file for system {name!r} (expected {where}/{name}.txt)",
                    )
            systems.append(
                SystemSpec(
                    name=name,
                    index=None,
                    samples=found[name],
                    formats={ds.name: ds.sample_format for ds in datasets},
                    datasets=all_names,
                    where={
                        ds.name: ("dataset", ds.index, "samples" if ds.samples_given else "path") for ds in datasets
                    },
                )
            )
        return systems

    generators = None
    seen: set[str] = set()
    for i, s in enumerate(raw):
        p = ("system", i)
        name = s.get("name")
        if name is None:
            raise fail(p, "every [[system]] needs a 'name'")
        if name in seen:
            raise fail(p + ("name",), f"system {name!r} is defined twice")
        seen.add(name)
        names = tuple(s.get("datasets", all_names))
        for dname in names:
            if dname not in by_name:
                raise fail(p + ("datasets",), f"system {name!r} names unknown dataset {dname!r}")
        spec = SystemSpec(name=name, index=i, datasets=names)
        for dname in names:
            spec.formats[dname] = fmt_of(s.get("format"), p + ("format",), by_name[dname].sample_format)
        if "generator" in s:
            if "samples" in s:
                raise fail(p + ("samples",), f"system {name!r} has both 'generator' and 'samples'; keep one")
            if generators is None:
                try:
                    generators = registry("generator")
                except CotkError as exc:
                    raise fail(p + ("generator",), exc.message) from None
            gen = s["generator"]
            if gen not in generators:
                raise fail(
                    p + ("generator",),
                    refusal("generator", gen)
                    or missing_sentence("generator", gen)
                    or f"unknown generator {gen!r}; registered: {', '.join(sorted(generators)) or 'none'}",
                )
            settings = dict(s.get("settings", {}))
            protocol = None
            if "protocol" in s:
                protocol = _load_protocol(resolve(s["protocol"]), p + ("protocol",), fail)
                spec.protocol, spec.protocol_sha256 = protocol.path, protocol.sha256
            try:
                _check_generator(gen, generators[gen].obj, settings, protocol)
            except GeneratorError as exc:  # the protocol's decoding values or chat prompts refused
                raise fail(p + ("protocol",), exc.message) from None
            except TypeError as exc:
                raise fail(p + ("settings",), f"generator {gen!r} rejected its settings: {exc}") from None
            except CotkError as exc:
                raise fail(p + ("settings",), f"generator {gen!r}: {exc.message}") from None
            except Exception as exc:
                raise fail(
                    p + ("settings",), f"generator {gen!r} could not be created: {type(exc).__name__}: {exc}"
                ) from None
            spec.generator, spec.settings = gen, settings
            spec.where = {dname: p + ("generator",) for dname in names}
            for dname in names:
                ds_inputs = by_name[dname].inputs
                if ds_inputs is None:
                    raise fail(
                        p + ("generator",),
                        f"generator system {name!r} needs inputs for dataset {dname!r}: "
                        "set 'inputs' in its [[dataset]] or add inputs.txt to its folder",
                    )
                if protocol is not None and protocol.inputs_sha256 and check_files:
                    if ds_inputs.is_dir() or inputs_sha256(ds_inputs) != protocol.inputs_sha256:
                        raise fail(
                            p + ("protocol",),
                            f"protocol {s['protocol']} names the inputs file {protocol.inputs.name}, but dataset "
                            f"{dname!r} has other inputs; drop the protocol's 'inputs' to use it on several datasets",
                        )
            systems.append(spec)
            continue
        for key in ("settings", "protocol"):
            if key in s:
                raise fail(p + (key,), f"system {name!r} has '{key}' but no 'generator'")
        samples = s.get("samples")
        for dname in names:
            ds = by_name[dname]
            if isinstance(samples, dict):
                for key in samples:
                    if key not in by_name:
                        raise fail(p + ("samples", key), f"system {name!r} has samples for unknown dataset {key!r}")
                    if not isinstance(samples[key], str):
                        raise fail(p + ("samples", key), f"'samples.{key}' must be a string (a file path)")
                rel = samples.get(dname)
                file = resolve(rel) if rel is not None else None
                key_path = p + ("samples", dname) if rel is not None else p + ("samples",)
            elif isinstance(samples, str):
                rel = samples.replace("{dataset}", dname)
                file = resolve(rel)
                key_path = p + ("samples",)
            else:
                rel, file, key_path = None, None, p + ("name",)
            if file is None and ds.samples_dir is not None:
                file = ds.samples_dir / f"{name}.txt"
                rel = _rel(file, resolve("."))
            if file is None:
                raise fail(
                    key_path,
                    f"system {name!r} has no sample file for dataset {dname!r} "
                    "(set 'samples' or give the dataset a samples/ folder)",
                )
            if check_files and not file.is_file():
                raise fail(key_path, f"system {name!r} has no sample file for dataset {dname!r} (expected {rel})")
            spec.samples[dname] = file
            spec.where[dname] = key_path
        systems.append(spec)
    return systems


def _load_protocol(path: Path, where: tuple, fail) -> Any:
    from ..llm.protocol import ProtocolError, load_protocol

    try:
        return load_protocol(path)
    except ProtocolError as exc:
        message = exc.message
        raise fail(where, message if message.startswith("protocol") else f"protocol {message}") from None


def _check_generator(name: str, factory: Any, settings: dict[str, Any], protocol: Any) -> None:
    """Build the generator once with its settings (and the protocol's decoding values, whose conflicts and chat
    prompts are refused with a GeneratorError): its own refusals are config errors."""
    from ..generation import check_prompts_accepted, protocol_settings

    if protocol is None:
        factory(**settings)
        return
    built = factory(**protocol_settings(name, factory, settings, protocol))
    check_prompts_accepted(name, built, protocol)
