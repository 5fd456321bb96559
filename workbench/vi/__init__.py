"""Variational inference building blocks: the nn4post mixture (``elbo``) and its fit loop (``fit``)."""
