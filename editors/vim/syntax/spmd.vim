" Vim syntax file for spmd, the language of spmdc.
" The same token classes as editors/textmate/spmd.tmLanguage.json;
" tests/editors/test_vim.py checks both against every sample.
if exists('b:current_syntax')
  finish
endif

syn keyword spmdDeclaration def shmap sharded nextgroup=spmdFunctionName skipwhite
syn match   spmdFunctionName "\h\w*" contained
syn keyword spmdMesh mesh nextgroup=spmdMeshName skipwhite
syn keyword spmdOn on nextgroup=spmdMeshName skipwhite
syn match   spmdMeshName "\h\w*" contained
syn keyword spmdImport import nextgroup=spmdModule skipwhite
syn match   spmdModule "\h\w*\%(\.\h\w*\)*" contained
syn keyword spmdControl return for in range if else
syn keyword spmdLogical and or not
syn keyword spmdConstant true false None
syn keyword spmdDType f32 f64 bf16 f16 i32 i64 bool
syn keyword spmdAuto auto
syn keyword spmdCollective psum pmean pmax pmin pbroadcast pvary all_gather_invariant
      \ all_gather psum_scatter pscatter all_to_all ppermute axis_index axis_size
syn match   spmdCall "\<\h\w*\%(\.\h\w*\)*\ze\s*("
syn match   spmdSpec "\<P\ze\s*("
syn match   spmdKeywordArg "\<\h\w*\ze=[^=]"
syn match   spmdNumber "\<\d\+\>"
syn match   spmdFloat "\<\d\+\.\d*\%([eE][+-]\=\d\+\)\="
syn match   spmdFloat "\.\d\+\%([eE][+-]\=\d\+\)\="
syn match   spmdFloat "\<\d\+[eE][+-]\=\d\+\>"
syn match   spmdOperator "->\|\*\*\|//\|<=\|>=\|==\|!=\|[-+*/%<>=@]"
" A type's variance: f32[8, 4]{batch}.
syn region  spmdVariance matchgroup=spmdVarianceBrace start="\]\@<={" end="}" contains=spmdAxis oneline
syn match   spmdAxis "\h\w*" contained
syn region  spmdAttribute matchgroup=spmdAttributeBracket start="\[\[" end="\]\]" oneline
syn region  spmdString start=+"+ end=+"\|$+ contains=spmdEscape oneline
syn match   spmdEscape "\\." contained
syn match   spmdComment "#.*$" contains=spmdTodo,@Spell
syn keyword spmdTodo TODO FIXME XXX NOTE contained
" Anything else that is not a name, number, operator or bracket is an error.
syn match   spmdError "[^[:space:][:alnum:]_#\"()\[\]{},;:.=+\-*/%<>!@]"
" A hole `???` of an exercise's starter (exercises/).
syn match   spmdHole "???"

hi def link spmdDeclaration  Statement
hi def link spmdFunctionName Function
hi def link spmdMesh         StorageClass
hi def link spmdOn           Keyword
hi def link spmdMeshName     Type
hi def link spmdImport       Include
hi def link spmdModule       Identifier
hi def link spmdControl      Statement
hi def link spmdLogical      Operator
hi def link spmdConstant     Constant
hi def link spmdDType        Type
hi def link spmdAuto         Constant
hi def link spmdCollective   Special
hi def link spmdCall         Function
hi def link spmdSpec         Structure
hi def link spmdKeywordArg   Identifier
hi def link spmdNumber       Number
hi def link spmdFloat        Float
hi def link spmdOperator     Operator
hi def link spmdVarianceBrace Delimiter
hi def link spmdAxis         Label
hi def link spmdAttribute    PreProc
hi def link spmdAttributeBracket PreProc
hi def link spmdString       String
hi def link spmdEscape       SpecialChar
hi def link spmdComment      Comment
hi def link spmdTodo         Todo
hi def link spmdError        Error
hi def link spmdHole         Todo

let b:current_syntax = 'spmd'
