// frontend/nesting.cpp — NestingGuard: see nesting.h.
#include "frontend/nesting.h"

namespace spmd::frontend_detail {

bool ends_operand(TokenKind k) {
  switch (k) {
    case TokenKind::Ident:
    case TokenKind::Int:
    case TokenKind::Float:
    case TokenKind::String:
    case TokenKind::True:
    case TokenKind::False:
    case TokenKind::None:
    case TokenKind::RParen:
    case TokenKind::RBrack:
      return true;
    default:
      return false;
  }
}

bool is_operator(TokenKind k) {
  switch (k) {
    case TokenKind::Pow:
    case TokenKind::Star:
    case TokenKind::Slash:
    case TokenKind::FloorDiv:
    case TokenKind::Percent:
    case TokenKind::At:
    case TokenKind::Plus:
    case TokenKind::Minus:
    case TokenKind::Lt:
    case TokenKind::Le:
    case TokenKind::Gt:
    case TokenKind::Ge:
    case TokenKind::Eq:
    case TokenKind::Ne:
    case TokenKind::And:
    case TokenKind::Or:
    case TokenKind::Not:
      return true;
    default:
      return false;
  }
}

namespace {

/// Tokens that end one expression and start another at the same bracket level.
bool resets_expression(TokenKind k) {
  return k == TokenKind::Comma || k == TokenKind::Colon || k == TokenKind::Assign ||
         k == TokenKind::Semi || k == TokenKind::Arrow ||
         (is_keyword(k) && !is_operator(k) && !ends_operand(k));
}

}  // namespace

std::optional<NestingLimit> NestingGuard::feed(TokenKind k) {
  const TokenKind previous = previous_;
  previous_ = k;
  Level &level = levels_.back();
  const size_t open_brackets = levels_.size() - 1;

  // A block closed at this level ends its `if` chain unless `else` follows.
  if (previous == TokenKind::RBrace && k != TokenKind::Else) {
    total_if_links_ -= level.if_links;
    level.if_links = 0;
  }
  if (k == TokenKind::If && previous == TokenKind::Else) {
    ++level.if_links;
    ++total_if_links_;
    if (open_brackets + total_if_links_ > kMaxBracketNesting) return NestingLimit::IfChain;
  }

  const bool after_bracketed = previous == TokenKind::RParen || previous == TokenKind::RBrack;
  bool counts = is_operator(k) || (k == TokenKind::LBrack && ends_operand(previous)) ||
                (k == TokenKind::LParen && after_bracketed);
  if (k == TokenKind::Dot) {
    if (after_bracketed || level.member_chain) {
      counts = true;
      level.member_chain = true;
    }
  } else if (k != TokenKind::Ident && !is_open(k) && !is_close(k)) {
    level.member_chain = false;
  }
  if (counts) {
    ++level.ops;
    ++total_ops_;
    if (total_ops_ + levels_.size() > kMaxExpressionDepth) return NestingLimit::Expression;
  }

  if (is_open(k)) {
    levels_.push_back(Level{});
    if (open_brackets + 1 > kMaxBracketNesting) return NestingLimit::Brackets;
    if (open_brackets + 1 + total_if_links_ > kMaxBracketNesting) return NestingLimit::IfChain;
  } else if (is_close(k)) {
    if (levels_.size() > 1) {
      total_ops_ -= level.ops;
      total_if_links_ -= level.if_links;
      levels_.pop_back();
    }
  } else if (resets_expression(k)) {
    total_ops_ -= level.ops;
    level.ops = 0;
  }
  return std::nullopt;
}

}  // namespace spmd::frontend_detail
