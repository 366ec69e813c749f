"""CUDA kernel templates, installed as the package data tunedgemm.kernels."""
