"""The models of the Texygen benchmark, on shared parts.

``generator`` (the one LSTM generator, also the oracle), ``discriminator`` (the one CNN classifier),
``reinforce`` (policy gradient with Monte-Carlo rollout, used by SeqGAN, MaliGAN, RankGAN and LeakGAN);
one file per model with only what differs: its loss, its reward, its ranker or its manager.
"""

#: model name -> module under cotk_repro_texygen.models
MODELS = ("mle", "seqgan", "maligan", "rankgan", "leakgan", "textgan", "gsgan")
