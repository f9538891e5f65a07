"""Write data/gold/refs.txt (the oracle's test sentences of the cpu preset) and data/inputs.txt (one line per
sample the generators draw) for benchmark.toml. Deterministic: the oracle-lstm loader's seed and sizes."""

from pathlib import Path

from cotk_repro_texygen.data import OracleData
from cotk_repro_texygen.protocol import CPU

here = Path(__file__).resolve().parent / "data"
d = OracleData(
    seed=CPU["seed"],
    vocab_size=CPU["vocab_size"],
    seq_len=CPU["seq_len"],
    emb_dim=CPU["oracle_emb_dim"],
    hidden_dim=CPU["oracle_hidden_dim"],
    n_train=CPU["n_train"],
    n_test=CPU["n_test"],
)
(here / "gold").mkdir(parents=True, exist_ok=True)
(here / "gold" / "refs.txt").write_text("\n".join(d.sentences("test")) + "\n", encoding="utf-8")
(here / "inputs.txt").write_text("".join(f"sample {i + 1}\n" for i in range(CPU["eval_samples"])), encoding="utf-8")
print("general hash of the oracle data:", d.hash_codes["general"])
