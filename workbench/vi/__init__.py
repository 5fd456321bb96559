"""Variational inference kernels: the nn4post mixture's loss and gradient (``elbo``) and its fit
loop (``fit``), full-rank Gaussian VI's natural-gradient and Adam steps, DADVI's fixed-draw
objective, GMMVI's updates, Pathfinder's path and inverse Hessian.

This package holds the kernels only; the methods a user calls are in ``workbench/methods/``
(``vi/pathfinder.py`` is the path, ``methods/pathfinder.py`` the method), and what the fitted
methods share (importance weights, a fit's health) in ``workbench/fitting/``.
"""
