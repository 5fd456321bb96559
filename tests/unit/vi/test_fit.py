"""workbench/vi/fit.py: the fit kernel's state carries over between calls."""

import numpy as np

import workbench as wb
from workbench.fitting.mixture_start import initial_parameters
from workbench.vi import fit as F


def test_a_fit_run_in_segments_is_the_same_fit():
    """The kernel's state (optimiser moments, stopping rule) carries over between calls."""
    t = wb.targets.gaussian(3)
    method = wb.methods.NN4Post(n_components=2, init="box", progress=False)
    kernel = F.fit_kernel.for_target(t)
    out = []
    for segments in ([(0, 300)], [(0, 100), (100, 250), (250, 300)]):
        rng = np.random.default_rng(5)
        params, lr_scale = initial_parameters(method, t, np.random.default_rng(1), None)
        settings = F.fit_settings(k=2, steps=300, samples=10, exact=1, grad_budget=-1, window=50, patience=2,
                                  lr=0.05, lr_final=0.1, r=1.0, tol=1e-4, beta1=0.9, beta2=0.999, adam_eps=1e-8)
        state, traces = F.new_state(params.size), np.zeros((300, len(F.TRACE_NAMES)))
        for start, stop in segments:
            kernel(t.kernel_logp_grad, t.kernel_logp_grad_batch, t.kernel_data, params, rng,
                   settings._replace(t_start=start, t_stop=stop), lr_scale, state,
                   traces, np.zeros(2, dtype=np.int64))
        out.append((params, traces))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
