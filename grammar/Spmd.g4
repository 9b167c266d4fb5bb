// Spmd.g4 — the ANTLR 4 grammar of the spmdc source language.
//
// The grammar is deliberately permissive where a precise message is better
// given by the AST builder (compiler/frontend/ast_builder_*.cpp): partition
// specs and `on MESH` are optional everywhere, comparisons associate, and the
// spec constructor `P` is an ordinary identifier. Newlines are whitespace;
// statements are separated by their first token (an identifier, a keyword or
// the `[[` of a loop's attributes) and may end with an optional `;`. Comments and malformed input go to the
// hidden channel, so the parser never sees them: the builder reports bad
// characters and attaches comments to declarations and statements.
//
// This grammar is the specification. spmdc parses a correct program with
// compiler/frontend/fast_parser.cpp, these rules written by hand (making
// ANTLR's choices where they are ambiguous), and only a file with errors with
// the parser generated from here, which reports them. Change both together:
// tests/fuzz/parser_diff checks that they build the same AST.
//
// Code is generated at build time (grammar/CMakeLists.txt); nothing generated
// lives in the source tree.
grammar Spmd;

// ------------------------------------------------------------------ declarations

module_ : decl* EOF ;

decl
  : importDecl
  | meshDecl
  | funcDecl
  ;

importDecl : IMPORT (IDENT (DOT IDENT)* | file=STRING) SEMI? ;

meshDecl : MESH IDENT ASSIGN LPAREN (meshAxis (COMMA meshAxis)* COMMA?)? RPAREN SEMI? ;

meshAxis : IDENT COLON INT ;

funcDecl
  : attributes* kind=(DEF | SHMAP | SHARDED) IDENT typeParams?
    LPAREN (param (COMMA param)* COMMA?)? RPAREN
    (ARROW results)? (ON mesh=IDENT)? block
  ;

attributes : LBRACK LBRACK IDENT (COMMA IDENT)* COMMA? RBRACK RBRACK ;

// `def relu[T](x: T[...])`: dtype variables, bound by the arguments of each call.
typeParams : LBRACK IDENT (COMMA IDENT)* COMMA? RBRACK ;

param : IDENT COLON typeExpr variance? (AT specExpr)? ;

results
  : LPAREN result (COMMA result)* COMMA? RPAREN
  | result
  ;

result : (name=IDENT COLON)? typeExpr (AT specExpr)? ;

// --------------------------------------------------------------- types and specs

typeExpr : IDENT LBRACK (dim (COMMA dim)* COMMA?)? RBRACK ;

// `...` stands for any number of dimensions (def signatures only).
dim : INT | IDENT | ELLIPSIS ;

variance : LBRACE (IDENT (COMMA IDENT)* COMMA?)? RBRACE ;

// `P(...)`, a bare `auto` (a `sharded` function lets the compiler choose), or
// `like(w)` on a result (parameter w's layout; the AST builder checks the form).
specExpr : IDENT (LPAREN (specDim (COMMA specDim)* COMMA?)? RPAREN)? ;

specDim
  : NONE
  | IDENT
  | LPAREN IDENT (COMMA IDENT)* COMMA? RPAREN
  ;

// -------------------------------------------------------------------- statements

block : LBRACE stmt* RBRACE ;

stmt
  : assignStmt
  | returnStmt
  | forStmt
  | ifStmt
  | callStmt
  ;

assignStmt : target (COMMA target)* ASSIGN expr SEMI? ;

target : IDENT (COLON typeExpr variance?)? ;

returnStmt : RETURN (expr (COMMA expr)*)? SEMI? ;

// `[[unroll]] for k in range(start, stop, step) { ... }`: attributes come first.
forStmt : attributes* FOR IDENT IN RANGE LPAREN expr (COMMA expr (COMMA expr)?)? RPAREN block SEMI? ;

ifStmt : IF expr block (ELSE (block | ifStmt))? SEMI? ;

// A call kept for its effect: `print("step {} loss {}", k, loss)` (lowering
// accepts only `print` here).
callStmt : dottedName LPAREN (argument (COMMA argument)* COMMA?)? RPAREN SEMI? ;

// ------------------------------------------------------------------- expressions
// Alternatives are listed from the highest precedence to the lowest; ANTLR turns
// the left recursion into loops (precedence climbing). A prefix operator binds
// what follows at its own level, so `-x ** 2` is `-(x ** 2)`.
//
// The grammar is unambiguous so that ANTLR's prediction looks a few tokens
// ahead, whatever the nesting. An ambiguity makes it read ahead until the two
// parses meet again, at every level: quadratic time on deep input. So a name
// is one identifier and every dot is `Member` (the ast builder joins `x.T` or
// `std.nn.relu`, members of a bare name, back into one dotted name, and
// lowering tells a value's attribute from a module member), and every call is
// `Apply`, whatever it calls: `f(x)` is Apply(Name), `(a @ b).sum(0)`
// Apply(Member), `grad(loss)(w)` Apply(Apply).

expr
  : IDENT                                                                  # Name
  | INT                                                                    # Int
  | FLOAT                                                                  # Float
  | (TRUE | FALSE)                                                         # Bool
  | STRING                                                                 # String
  | NONE                                                                   # NoneLiteral
  | LPAREN (expr (COMMA expr)* COMMA?)? RPAREN                             # ParenOrTuple
  | LBRACK (expr (COMMA expr)* COMMA?)? RBRACK                             # List
  // `[[` never starts a subscript: it opens the attributes of a following
  // statement (`x = a [[unroll]] for ...`), so indexing stops before it.
  | expr {_input->LA(2) != SpmdParser::LBRACK}?
    LBRACK subscript (COMMA subscript)* COMMA? RBRACK                      # Index
  | expr DOT IDENT                                                         # Member
  | expr call=LPAREN (argument (COMMA argument)* COMMA?)? RPAREN           # Apply
  | <assoc = right> expr op=POW expr                                       # Binary
  | op=MINUS expr                                                          # Unary
  | expr op=(STAR | SLASH | FLOORDIV | PERCENT | AT) expr                  # Binary
  | expr op=(PLUS | MINUS) expr                                            # Binary
  | expr op=(LT | LE | GT | GE | EQ | NE) expr                             # Binary
  | op=NOT expr                                                            # Unary
  | expr op=AND expr                                                       # Binary
  | expr op=OR expr                                                        # Binary
  ;

dottedName : IDENT (DOT IDENT)* ;

argument : (keyword=IDENT ASSIGN)? expr ;

// `x[None]` / `x[:, None]` insert an axis (NumPy's newaxis); listed first so a lone `None`
// is never read as an index expression.
subscript
  : newaxis=NONE
  | start=expr (colon1=COLON (stop=expr)? (colon2=COLON (step=expr)?)?)?
  | colon1=COLON (stop=expr)? (colon2=COLON (step=expr)?)?
  ;

// ------------------------------------------------------------------------ tokens
// spmdc lexes with compiler/frontend/scanner.cpp, these rules written by hand
// (longest match, first rule on ties). Change both together: tests/fuzz/
// lexer_diff checks that it gives exactly the generated lexer's tokens.

IMPORT : 'import' ;
MESH   : 'mesh' ;
DEF    : 'def' ;
SHMAP  : 'shmap' ;
SHARDED : 'sharded' ;
ON     : 'on' ;
RETURN : 'return' ;
FOR    : 'for' ;
IN     : 'in' ;
RANGE  : 'range' ;
IF     : 'if' ;
ELSE   : 'else' ;
AND    : 'and' ;
OR     : 'or' ;
NOT    : 'not' ;
TRUE   : 'true' ;
FALSE  : 'false' ;
NONE   : 'None' ;

ARROW  : '->' ;
POW    : '**' ;
FLOORDIV : '//' ;
LE     : '<=' ;
GE     : '>=' ;
EQ     : '==' ;
NE     : '!=' ;
LT     : '<' ;
GT     : '>' ;
ASSIGN : '=' ;
PLUS   : '+' ;
MINUS  : '-' ;
STAR   : '*' ;
SLASH  : '/' ;
PERCENT : '%' ;
AT     : '@' ;
LPAREN : '(' ;
RPAREN : ')' ;
LBRACK : '[' ;
RBRACK : ']' ;
LBRACE : '{' ;
RBRACE : '}' ;
COMMA  : ',' ;
COLON  : ':' ;
SEMI   : ';' ;
ELLIPSIS : '...' ;
DOT    : '.' ;

FLOAT
  : DIGITS '.' DIGITS? EXPONENT?
  | '.' DIGITS EXPONENT?
  | DIGITS EXPONENT
  ;
INT    : DIGITS ;
IDENT  : [a-zA-Z_] [a-zA-Z_0-9]* ;
STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* '"' ;

fragment DIGITS   : [0-9]+ ;
fragment EXPONENT : [eE] [+-]? DIGITS ;

COMMENT : '#' ~[\r\n]* -> channel(HIDDEN) ;
WS      : [ \t\r\n\f]+ -> skip ;

// Malformed input: kept on the hidden channel and reported by the builder.
UNTERMINATED_STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* '\\'? -> channel(HIDDEN) ;
BAD_BYTES           : [\u0080-\u00FF]+ -> channel(HIDDEN) ;
BAD_CHAR            : . -> channel(HIDDEN) ;
