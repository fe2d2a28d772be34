//! ipuc command-line tools: ipu-opt, ipu-run, ipu-bench, ipu-lit, filecheck.
