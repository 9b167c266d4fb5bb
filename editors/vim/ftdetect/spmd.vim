" .spmd files are spmdc programs (editors/README.md).
autocmd BufRead,BufNewFile *.spmd setfiletype spmd
