" spmd: comments start with #, two-space indentation (as `spmdc fmt` writes).
if exists('b:did_ftplugin')
  finish
endif
let b:did_ftplugin = 1
setlocal commentstring=#\ %s comments=:#
setlocal expandtab shiftwidth=2 softtabstop=2
" :make checks the buffer's file; errors land in the quickfix list.
setlocal makeprg=spmdc\ check\ %
setlocal errorformat=%f:%l:%c:\ %trror:\ %m,%f:%l:%c:\ %tarning:\ %m,%-G%.%#
let b:undo_ftplugin = 'setlocal commentstring< comments< expandtab< shiftwidth< softtabstop< makeprg< errorformat<'
