"""The typed contracts of what each plugin hook registers, and the check that refuses a component breaking one.

One :class:`typing.Protocol` per product (what a registered factory builds, or for templates what is
registered), the factory types the hooks take (:mod:`cotk_repro.hookspecs` uses them in its signatures), and
:func:`contract_problem`, which :class:`cotk_repro.plugins.Plugins` asks about every component at registration:

=================  ==============================================  ===========================================
kind               registered                                      it builds
=================  ==============================================  ===========================================
tokenizer          ``factory(**options)`` (``PREFIX:``: one arg)   :class:`Tokenizer`
dataloader         ``factory(path, **options)``                    :class:`Dataloader`
metric             a class or ``factory(**options)``               :class:`ComputingMetric` or
                                                                   :class:`StreamingMetric`
runtime            ``factory()``                                   :class:`Runtime`
publish_target     ``factory()``                                   :class:`PublishTarget`
generator          ``factory(**settings)``                         :class:`Generator` (or ``text -> text``)
template           the :class:`Template` itself                    --
=================  ==============================================  ===========================================

Registration judges a component *without calling it* (a factory may import torch): it must be callable
with the arguments its kind is called with; a class (the factory is often the class itself) must have the
methods its product needs, each taking the arguments it is given; a template must have every attribute of
:class:`Template`. A plain factory's product can only be judged once built; the consumers that build one check
it with :func:`product_problem`. The metric facts (direction, range, cost ...) have defaults on
:class:`cotk_repro.metrics.Metric` and are read with them (docs/metrics.md), so they are described here
(:class:`MetricFacts`) but not required.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = [
    "ComputingMetric",
    "Dataloader",
    "DataloaderFactory",
    "Generator",
    "GeneratorFactory",
    "MetricFactory",
    "MetricFacts",
    "PublishTarget",
    "PublishTargetFactory",
    "Register",
    "Runtime",
    "RuntimeFactory",
    "StreamingMetric",
    "Template",
    "Tokenizer",
    "TokenizerFactory",
    "contract_problem",
    "product_problem",
]


@runtime_checkable
class Tokenizer(Protocol):
    """What a tokenizer factory builds: ``tokenize`` and the ``settings`` that go into the setting hash.

    ``detokenize(tokens) -> str`` is optional: without it a token list is joined with spaces."""

    @property
    def settings(self) -> Mapping[str, Any]:
        """The settings that go into the setting hash (name, version, options)."""

    def tokenize(self, text: str) -> list[str]:
        """The tokens of one text."""


@runtime_checkable
class Dataloader(Protocol):
    """What a dataloader factory builds: a loaded dataset with its ``hash_codes``."""

    #: raw data, data, vocab, setting and general hash codes
    hash_codes: Mapping[str, str]


@runtime_checkable
class ComputingMetric(Protocol):
    """A metric that scores whole lists: ``compute(hypotheses, references) -> result dict``."""

    def compute(self, hypotheses: Sequence[Any], references: Sequence[Any] | None = None) -> Mapping[str, Any]:
        """The result dict of whole lists (``{"<key>": value, "<key> hashvalue": hash, ...}``)."""


@runtime_checkable
class StreamingMetric(Protocol):
    """A metric that scores a stream of batches: ``forward(batch)`` many times, then ``close() -> result dict``."""

    def forward(self, batch: Mapping[str, Any]) -> None:
        """Take one batch: ``{"hyps": [...], "refs": [[...], ...]}``."""

    def close(self) -> Mapping[str, Any]:
        """The result dict of everything forwarded since the last close."""


class MetricFacts(Protocol):
    """The facts a metric declares (docs/metrics.md, "The metric contract"); absent ones take the defaults of
    :class:`cotk_repro.metrics.Metric`, so registration does not require them."""

    name: str
    version: str
    needs_references: bool
    higher_is_better: bool
    value_range: tuple[float, float]
    level: str
    cost: float


@runtime_checkable
class Runtime(Protocol):
    """What a runtime factory builds: reruns a recorded entry for ``cotk-repro reproduce``.

    Optional: ``on_host`` (True: the entry runs on this host, only with an explicit ``--runtime``) and
    ``connect()`` (reach the engine before anything is cloned)."""

    name: str
    #: where the entry runs, in words ("a Docker container")
    description: str

    def prepare(self, job: Any) -> Any:
        """Build the environment of ``job`` (:class:`cotk_repro.reproduce.job.Job`); what it reports of it."""

    def run(self, job: Any) -> Any:
        """Rerun the entry of ``job``: a :class:`cotk_repro.reproduce.job.Rerun`."""


@runtime_checkable
class PublishTarget(Protocol):
    """What a publish target factory builds: one step of ``cotk-repro publish``."""

    name: str

    def publish(self, ctx: Any) -> Mapping[str, Any]:
        """Publish ``ctx`` (:class:`cotk_repro.publish.targets.PublishContext`); one step of the report."""


@runtime_checkable
class Generator(Protocol):
    """What a generator factory builds for ``cotk-repro compare``: one output per input.

    ``name``, ``version`` and ``settings`` (the output cache key) and ``batch_size`` are read when present;
    a factory may instead build a plain callable ``text -> text``."""

    def generate(self, inputs: list[str]) -> list[str]:
        """One output text per input text."""


@runtime_checkable
class Template(Protocol):
    """A project template for ``cotk-repro init --template`` (:class:`cotk_repro.scaffold.ProjectTemplate`)."""

    name: str
    description: str
    #: the folders its files come from, later ones overriding earlier ones
    folders: Sequence[Any]
    task: str | None
    dataset: str
    metrics: Sequence[str]
    dependencies: Sequence[str]
    context: Mapping[str, Any]

    def summary(self, plugin: str | None = None) -> Mapping[str, Any]:
        """What ``init --list-templates --json`` prints for it."""


C_contra = TypeVar("C_contra", contravariant=True)


class Register(Protocol[C_contra]):
    """The ``register(name, component)`` callable each ``register_*`` hook receives."""

    def __call__(self, name: str, component: C_contra, /) -> None:
        """Register ``component`` under ``name`` (the name users type)."""


TokenizerFactory = Callable[..., Tokenizer]
DataloaderFactory = Callable[..., Dataloader]
MetricFactory = Callable[..., ComputingMetric | StreamingMetric]
RuntimeFactory = Callable[[], Runtime]
PublishTargetFactory = Callable[[], PublishTarget]
GeneratorFactory = Callable[..., Generator | Callable[[str], str]]

#: kind -> (positional arguments its factory is called with, the methods a class must have: name -> arguments)
_CALLED: dict[str, tuple[int, dict[str, int]]] = {
    "tokenizer": (0, {"tokenize": 1}),
    "dataloader": (1, {}),
    "runtime": (0, {"prepare": 1, "run": 1}),
    "publish_target": (0, {"publish": 1}),
    "generator": (0, {"generate": 1}),
}
#: kind -> the protocol its built product honours (metrics: either of two, judged apart)
_PRODUCT: dict[str, type] = {
    "tokenizer": Tokenizer,
    "dataloader": Dataloader,
    "runtime": Runtime,
    "publish_target": PublishTarget,
    "generator": Generator,
}


def _members(protocol: type) -> list[str]:
    """The attributes a protocol names, in the order it declares them."""
    names = [
        *getattr(protocol, "__annotations__", {}),
        *(k for k, v in vars(protocol).items() if not k.startswith("_") and (callable(v) or isinstance(v, property))),
    ]
    return list(dict.fromkeys(names))


def _arity_problem(cls: type, method: str, n: int) -> str | None:
    """Why ``cls.method`` cannot take ``n`` arguments (None when it can or cannot be told)."""
    import inspect

    found = getattr(cls, method, None)
    if not callable(found):
        return f"its class has no {method}()"
    bound = isinstance(inspect.getattr_static(cls, method, None), (staticmethod, classmethod))
    try:
        sig = inspect.signature(found)
    except (TypeError, ValueError):
        return None
    args = (None,) * (n if bound else n + 1)
    try:
        sig.bind(*args)
    except TypeError:
        return f"its {method}() cannot take {n} argument{'s' if n != 1 else ''} ({method}{sig} here)"
    return None


def _call_problem(kind: str, name: str, component: Any) -> str | None:
    """Why ``component`` cannot be called as a ``kind`` factory is (None when it can or cannot be told)."""
    import inspect

    n = _CALLED[kind][0] if kind in _CALLED else 0
    if kind == "tokenizer" and name.endswith(":"):
        n = 1
    try:
        sig = inspect.signature(component)
    except (TypeError, ValueError):  # a builtin without a signature: nothing to tell
        return None
    try:
        sig.bind(*(None,) * n)
    except TypeError:
        said = {0: "no arguments", 1: "one argument"}[n]
        what = "its options as keywords" if kind != "dataloader" else "the dataset folder, then options as keywords"
        return f"it cannot be called with {said} (a factory takes {what}; {sig} here)"
    return None


#: how a metric scores a resample of its items (``Metric.resampling``; docs/metrics.md, "Significance and
#: intervals"): from per-item sufficient statistics, from per-item values, or not at all (with a reason)
RESAMPLINGS = ("statistics", "values", "none")
_RESAMPLING_METHOD = {"statistics": "resample_statistics", "values": "resample_values"}


def resampling_problem(component: Any) -> str | None:
    """Why a metric class's resampling declaration is broken (None when it holds): ``resampling`` one of
    :data:`RESAMPLINGS`, the method it names overridden, or for ``"none"`` a reason in ``no_interval``. A class
    that declares nothing has no interval, for the base class's reason."""
    kind = getattr(component, "resampling", None)
    if kind is None:  # a class honouring the contract without deriving from Metric: no interval, the base's reason
        return None
    if kind not in RESAMPLINGS:
        return f"its resampling is {kind!r}, not one of {', '.join(RESAMPLINGS)}"
    if kind == "none":
        reason = getattr(component, "no_interval", None)
        if not isinstance(reason, str) or not reason.strip():
            return "it declares resampling 'none' without a reason in no_interval (one sentence)"
        return None
    method = _RESAMPLING_METHOD[kind]
    own = getattr(component, method, None)
    base = next(
        (k for k in component.__mro__ if k.__module__ == "cotk_repro.metrics.base" and k.__name__ == "Metric"), None
    )
    if not callable(own) or (base is not None and own is getattr(base, method)):
        return f"it declares resampling {kind!r} but does not implement {method}()"
    return None


def _metric_class_problem(component: type) -> str | None:
    resampling = resampling_problem(component)
    if resampling is not None:
        return resampling
    base = next(
        (k for k in component.__mro__ if k.__module__ == "cotk_repro.metrics.base" and k.__name__ == "Metric"), None
    )
    if base is not None:  # the base class has all three; one of compute or close must be the subclass's own
        if component.compute is base.compute and component.close is base.close:  # type: ignore[attr-defined]
            return "it overrides neither compute() nor forward()/close() of cotk_repro.metrics.Metric"
        own = "compute" if component.compute is not base.compute else "close"  # type: ignore[attr-defined]
        return _arity_problem(component, own, 2 if own == "compute" else 0)
    streams = callable(getattr(component, "forward", None)) and callable(getattr(component, "close", None))
    if streams:
        return _arity_problem(component, "forward", 1) or _arity_problem(component, "close", 0)
    if callable(getattr(component, "compute", None)):
        return _arity_problem(component, "compute", 2)
    return "its class has neither forward()/close() nor compute()"


def contract_problem(kind: str, name: str, component: Any) -> str | None:
    """Why ``component`` cannot be the ``kind`` ``name`` (None when it can), judged without calling it.

    A factory (or class) must be callable with the arguments its kind is called with: options as keywords,
    a dataloader's folder first, a parametrized tokenizer ``PREFIX:`` one argument. A class must have its
    product's methods, each taking the arguments it is given (a metric: ``compute(hyps, refs)`` or
    ``forward(batch)``/``close()``; a ``Metric`` subclass must override one). A template must have every
    attribute of :class:`Template`. A plain factory's product is checked when it is built
    (:func:`product_problem`). Kinds without a contract here (``command``) are never refused.
    """
    if kind == "template":
        if isinstance(component, type) or not isinstance(component, Template):
            missing = [m for m in _members(Template) if not hasattr(component, m)]
            what = "a class" if isinstance(component, type) else f"a {type(component).__name__}"
            return f"it is {what}, not a template (a cotk_repro.scaffold.ProjectTemplate)" + (
                f"; it lacks {', '.join(missing)}" if missing else ""
            )
        if isinstance(component.folders, (str, bytes)) or not isinstance(component.folders, Sequence):
            return "its folders are not a sequence of folders"
        return None
    if kind != "metric" and kind not in _CALLED:
        return None
    if not callable(component):
        return f"it is a {type(component).__name__}, not a class or a factory"
    problem = _call_problem(kind, name, component)
    if problem is not None or not isinstance(component, type):
        return problem
    if kind == "metric":
        return _metric_class_problem(component)
    if kind == "generator" and not callable(getattr(component, "generate", None)):
        if any("__call__" in vars(k) for k in component.__mro__ if k is not object):  # text -> text instances
            return _arity_problem(component, "__call__", 1)
        return "its class has neither generate() nor __call__()"
    for method, n in _CALLED[kind][1].items():
        problem = _arity_problem(component, method, n)
        if problem is not None:
            return problem
    return None


def product_problem(kind: str, product: Any) -> str | None:
    """Why ``product``, built by a ``kind`` factory, does not honour its protocol (None when it does)."""
    if kind == "metric":
        if isinstance(product, (ComputingMetric, StreamingMetric)):
            return None
        return f"it built a {type(product).__name__}, which has neither forward()/close() nor compute()"
    protocol = _PRODUCT.get(kind)
    if protocol is None or isinstance(product, protocol):
        return None
    if kind == "generator" and callable(product):  # a plain text -> text callable
        return None
    missing = [m for m in _members(protocol) if not hasattr(product, m)]
    return f"it built a {type(product).__name__}, which lacks {', '.join(missing)}"
