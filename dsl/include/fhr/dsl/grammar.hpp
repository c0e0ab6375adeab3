#pragma once
/// \file
/// The `.fhr` grammar as PEGTL rules (documented in docs/language.md).
///
/// Every rule that may fail hard appears in `must<>` and has a row in the
/// error table at the bottom (`error_info`); the parser's control asserts at
/// compile time that a raised rule has one, so no syntax error can lack a
/// code and a message.

#include "fhr/dsl/ast.hpp"
#include "fhr/dsl/diagnostics.hpp"

#include <tao/pegtl.hpp>
#include <tao/pegtl/contrib/analyze_traits.hpp>

#include <array>
#include <cstdint>
#include <string_view>

namespace fhr::grammar {

using namespace tao::pegtl;

// ---- lexical ------------------------------------------------------------
struct comment : seq<one<'#'>, until<eolf>> {};
/// `@line N`: the next line counts as line N (as C's #line). The
/// disassembler writes it so that recompiled text keeps the original lines.
struct line_number : plus<digit> {};
struct line_directive : seq<one<'@'>, TAO_PEGTL_STRING("line"), plus<blank>, line_number, star<blank>, eolf> {
};
/// Runs of blanks are one match (indentation is most of the whitespace).
struct separator : sor<plus<ascii::space>, comment, line_directive> {};
/// Byte classes for `ws`: 1 a blank (a run of them is one loop), 2 a byte
/// that may start a comment or `@line` (tried as a separator), 0 anything
/// else. A table keeps the test of each byte to one load.
inline constexpr std::array<std::uint8_t, 256> kSeparatorClass = [] {
  std::array<std::uint8_t, 256> table{};
  for (const unsigned char c : {' ', '\t', '\n', '\v', '\f', '\r'})
    table[c] = 1;
  table['#'] = 2;
  table['@'] = 2;
  return table;
}();

/// `star<separator>`, written out: a plan is mostly whitespace between
/// tokens, and this skips a run of blanks in one loop and tries the other
/// separators only where a `#` or `@` follows, where star<separator> tries
/// all three alternatives after every run.
struct ws {
  using rule_t = ws;
  using subs_t = type_list<separator>;

  static std::uint8_t class_of(const char c) { return kSeparatorClass[static_cast<unsigned char>(c)]; }

  /// Most calls find no whitespace at all (`w[1]` has three places that
  /// may have some), and most others one blank between two words: those
  /// answers are inlined, the loop is not.
  template <apply_mode A, rewind_mode M, template <typename...> class Action,
            template <typename...> class Control, typename ParseInput, typename... States>
  static bool match(ParseInput &in, States &&...st) {
    if (in.empty()) return true;
    const std::uint8_t first = class_of(*in.current());
    if (first == 0) return true;
    if (first == 1 && in.size(2) >= 2 && class_of(in.current()[1]) == 0) {
      in.bump(1);
      return true;
    }
    return skip<A, Action, Control>(in, st...);
  }

  template <apply_mode A, template <typename...> class Action, template <typename...> class Control,
            typename ParseInput, typename... States>
  [[gnu::noinline]] static bool skip(ParseInput &in, States &&...st) {
    for (;;) {
      const char *p = in.current();
      const char *const end = in.end();
      while (p != end && class_of(*p) == 1)
        ++p;
      in.bump(static_cast<std::size_t>(p - in.current()));
      if (p == end || class_of(*p) != 2) return true;
      if (!Control<separator>::template match<A, rewind_mode::required, Action, Control>(in, st...))
        return true;
    }
  }
};

struct kw_const : TAO_PEGTL_KEYWORD("const") {};
struct kw_budget : TAO_PEGTL_KEYWORD("budget") {};
struct kw_location : TAO_PEGTL_KEYWORD("location") {};
struct kw_devices : TAO_PEGTL_KEYWORD("devices") {};
struct kw_value : TAO_PEGTL_KEYWORD("value") {};
struct kw_storage : TAO_PEGTL_KEYWORD("storage") {};
struct kw_exclusive : TAO_PEGTL_KEYWORD("exclusive") {};
struct kw_replicable : TAO_PEGTL_KEYWORD("replicable") {};
struct kw_at : TAO_PEGTL_KEYWORD("at") {};
struct kw_source : TAO_PEGTL_KEYWORD("source") {};
struct kw_ensure : TAO_PEGTL_KEYWORD("ensure") {};
struct kw_copy : TAO_PEGTL_KEYWORD("copy") {};
struct kw_move : TAO_PEGTL_KEYWORD("move") {};
struct kw_drop : TAO_PEGTL_KEYWORD("drop") {};
struct kw_discard : TAO_PEGTL_KEYWORD("discard") {};
struct kw_to : TAO_PEGTL_KEYWORD("to") {};
struct kw_from : TAO_PEGTL_KEYWORD("from") {};
struct kw_hold : TAO_PEGTL_KEYWORD("hold") {};
struct kw_lease : TAO_PEGTL_KEYWORD("lease") {};
struct kw_pending : TAO_PEGTL_KEYWORD("pending") {};
struct kw_acquire : TAO_PEGTL_KEYWORD("acquire") {};
struct kw_reserve : TAO_PEGTL_KEYWORD("reserve") {};
struct kw_release : TAO_PEGTL_KEYWORD("release") {};
struct kw_as : TAO_PEGTL_KEYWORD("as") {};
struct kw_plan : TAO_PEGTL_KEYWORD("plan") {};
struct kw_reclaim : TAO_PEGTL_KEYWORD("reclaim") {};
struct kw_enter : TAO_PEGTL_KEYWORD("enter") {};
struct kw_exit : TAO_PEGTL_KEYWORD("exit") {};
struct kw_program : TAO_PEGTL_KEYWORD("program") {};
struct kw_scope : TAO_PEGTL_KEYWORD("scope") {};
struct kw_run : TAO_PEGTL_KEYWORD("run") {};
struct kw_actions : TAO_PEGTL_KEYWORD("actions") {};
struct kw_for : TAO_PEGTL_KEYWORD("for") {};
struct kw_in : TAO_PEGTL_KEYWORD("in") {};

struct keyword
    : sor<kw_const, kw_budget, kw_location, kw_devices, kw_value, kw_storage, kw_exclusive, kw_replicable,
          kw_at, kw_source, kw_ensure, kw_copy, kw_move, kw_drop, kw_discard, kw_to, kw_from, kw_hold,
          kw_lease, kw_pending, kw_acquire, kw_reserve, kw_release, kw_as, kw_plan, kw_reclaim, kw_enter,
          kw_exit, kw_program, kw_scope, kw_run, kw_actions, kw_for, kw_in> {};

/// An identifier that is not one of the alternatives of `Keywords` (an
/// `sor` of keyword rules). The same language as
/// `seq<not_at<Keywords>, identifier>`, but it reads the word once and
/// compares it with the few keywords of its length and first letter instead
/// of trying every keyword rule at every name (names are most of a plan).
template <typename Keywords>
struct identifier_except {
  using rule_t = identifier_except;
  using subs_t = empty_list;

  template <char... Cs>
  static bool is_one_of(std::string_view word, ascii::keyword<Cs...> /*unused*/) {
    static constexpr char text[] = {Cs...};
    return word.size() == sizeof...(Cs) && word[0] == text[0] &&
           std::char_traits<char>::compare(word.data(), text, sizeof...(Cs)) == 0;
  }
  template <typename... Alternatives>
  static bool is_keyword(std::string_view word, sor<Alternatives...> /*unused*/) {
    return (is_one_of(word, Alternatives{}) || ...);
  }

  template <typename ParseInput>
  static bool match(ParseInput &in) {
    const char *const begin = in.current();
    const char *const end = in.end();
    if (begin == end || !internal::identifier_first::test(*begin)) return false;
    const char *p = begin + 1;
    while (p != end && internal::identifier_other::test(*p))
      ++p;
    const auto size = static_cast<std::size_t>(p - begin);
    if (is_keyword(std::string_view(begin, size), Keywords{})) return false;
    in.bump_in_this_line(size);
    return true;
  }
};

struct name : identifier_except<keyword> {};

/// Names that declare something (const, value, for variable, `as`, release).
struct declared_name : name {};
struct alias_name : name {};

// ---- strings -------------------------------------------------------------
struct escape_char : one<'"', '\\', 'n', 't', '{', '}'> {};
struct escape : seq<one<'\\'>, must<escape_char>> {};
struct string_char : sor<escape, not_one<'"', '\\', '\n', '\r'>> {};
struct string_close : one<'"'> {};
struct string_body : seq<star<string_char>, must<string_close>> {};
struct string_literal : seq<one<'"'>, string_body> {};

// ---- expressions -----------------------------------------------------------
/// `seq<digit, star<opt<one<'_'>>, digit>>` (a `_` only between digits) in
/// one loop: numbers are in every index.
struct digits {
  using rule_t = digits;
  using subs_t = empty_list;

  template <typename ParseInput>
  static bool match(ParseInput &in) {
    const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
    const char *p = in.current();
    const char *const end = in.end();
    if (p == end || !is_digit(*p)) return false;
    for (++p; p != end; ++p)
      if (!is_digit(*p) && !(*p == '_' && p + 1 != end && is_digit(p[1]))) break;
    in.bump_in_this_line(static_cast<std::size_t>(p - in.current()));
    return true;
  }
};
struct unit : sor<TAO_PEGTL_KEYWORD("KiB"), TAO_PEGTL_KEYWORD("MiB"), TAO_PEGTL_KEYWORD("GiB"),
                  TAO_PEGTL_KEYWORD("TiB"), TAO_PEGTL_KEYWORD("KB"), TAO_PEGTL_KEYWORD("MB"),
                  TAO_PEGTL_KEYWORD("GB"), TAO_PEGTL_KEYWORD("TB"), TAO_PEGTL_KEYWORD("B")> {};
/// A word that is a unit in the wrong case (`Mib`, `kb`): always an error.
struct misspelled_unit : seq<sor<TAO_PEGTL_ISTRING("kib"), TAO_PEGTL_ISTRING("mib"), TAO_PEGTL_ISTRING("gib"),
                                 TAO_PEGTL_ISTRING("tib"), TAO_PEGTL_ISTRING("kb"), TAO_PEGTL_ISTRING("mb"),
                                 TAO_PEGTL_ISTRING("gb"), TAO_PEGTL_ISTRING("tb"), TAO_PEGTL_ISTRING("b")>,
                             not_at<identifier_other>> {};
struct reject_unit : raise<misspelled_unit> {};
/// `1.5 GiB`: a decimal is allowed where it gives a whole number of bytes
/// (sema checks that); `0..4` stays a range since a digit must follow '.'.
struct fraction : seq<one<'.'>, digits> {};
/// The first letters of units and their misspellings: the unit
/// alternatives are tried only where one follows.
struct unit_letter : one<'K', 'M', 'G', 'T', 'B', 'k', 'm', 'g', 't', 'b'> {};
struct number : seq<digits, opt<fraction>,
                    opt<star<blank>, at<unit_letter>, sor<unit, seq<at<misspelled_unit>, reject_unit>>>> {};

struct expression;
struct paren_close : one<')'> {};
/// Parentheses nest; the parser limits the depth (E0011).
struct parenthesized : seq<one<'('>, ws, must<expression>, ws, must<paren_close>> {};
struct name_reference : name {};
struct primary : sor<number, parenthesized, name_reference> {};
struct multiplicative_operator : one<'*', '/'> {};
struct multiplicative_tail : seq<multiplicative_operator, ws, must<primary>> {};
struct term : seq<primary, star<ws, multiplicative_tail>> {};
struct additive_operator : one<'+', '-'> {};
struct additive_tail : seq<additive_operator, ws, must<term>> {};
struct expression : seq<term, star<ws, additive_tail>> {};

/// An expression stored into a statement's expression slot N.
template <int Slot>
struct slot_expression : expression {};

// ---- locations ---------------------------------------------------------------
struct brace_close : one<'}'> {};
struct device_expression : expression {};
struct cuda_device_braced : seq<one<'{'>, ws, must<device_expression>, ws, must<brace_close>> {};
struct cuda_location : seq<TAO_PEGTL_STRING("cuda"),
                           opt<one<':'>, sor<cuda_device_braced, star<sor<identifier_other, one<'-'>>>>>> {};
struct location : seq<sor<cuda_location, TAO_PEGTL_STRING("pageable-host"), TAO_PEGTL_STRING("pinned-host"),
                          TAO_PEGTL_STRING("pageable"), TAO_PEGTL_STRING("pinned")>,
                      not_at<identifier_other>> {};
/// A location stored into a statement's location slot N.
template <int Slot>
struct slot_location : location {};

// ---- operands ----------------------------------------------------------------
struct bracket_close : one<']'> {};
struct operand_name : name {};
struct index_all : one<'*'> {};
struct range_dots : TAO_PEGTL_STRING("..") {};
struct index_first : expression {};
struct index_last : expression {};
struct index_range_tail : seq<range_dots, ws, must<index_last>> {};
struct operand_subscript
    : seq<one<'['>, ws, sor<index_all, seq<must<index_first>, ws, opt<index_range_tail>>>, ws,
          must<bracket_close>> {};
struct operand : seq<operand_name, opt<ws, operand_subscript>> {};
struct operand_list : list_must<operand, one<','>, separator> {};

// ---- statements ----------------------------------------------------------------
/// Matching the keyword opens a statement of kind K in the builder.
template <ast::StmtKind K, typename Keyword>
struct begin : Keyword {};

struct equals : one<'='> {};
/// Every block's `{`: the parser remembers where it opened, for "unclosed
/// `{` opened here".
struct brace_open : one<'{'> {};
struct alias : seq<kw_as, ws, must<alias_name>> {};

struct const_statement : seq<begin<ast::StmtKind::Const, kw_const>, ws, must<declared_name>, ws, must<equals>,
                             ws, must<slot_expression<0>>> {};
struct budget_statement
    : seq<begin<ast::StmtKind::Budget, kw_budget>, ws, must<slot_location<0>>, ws, must<slot_expression<0>>> {
};
struct location_statement : seq<begin<ast::StmtKind::LocationDecl, kw_location>, ws, must<slot_location<0>>> {
};
struct devices_statement : seq<begin<ast::StmtKind::Devices, kw_devices>, ws, must<slot_expression<0>>> {};

struct family_count : seq<one<'['>, ws, must<slot_expression<0>>, ws, must<bracket_close>> {};
struct replicable_mode : kw_replicable {};
struct exclusive_mode : kw_exclusive {};
struct source_placement : seq<kw_source, ws, must<slot_location<0>>> {};
struct at_placement : seq<kw_at, ws, must<slot_location<0>>> {};
struct placement : sor<at_placement, source_placement> {};
struct value_statement
    : seq<begin<ast::StmtKind::Value, kw_value>, ws, must<declared_name>, opt<ws, family_count>, ws,
          must<slot_expression<1>>, opt<ws, kw_storage, ws, must<slot_expression<2>>>,
          opt<ws, sor<replicable_mode, exclusive_mode>>, ws, must<placement>> {};

struct ensure_action : seq<begin<ast::StmtKind::Ensure, kw_ensure>, ws, must<operand>, ws, must<kw_at>, ws,
                           must<slot_location<0>>> {};
struct copy_action : seq<begin<ast::StmtKind::Copy, kw_copy>, ws, must<operand>, ws, must<kw_to>, ws,
                         must<slot_location<0>>> {};
struct move_action : seq<begin<ast::StmtKind::Move, kw_move>, ws, must<operand>, ws, must<kw_to>, ws,
                         must<slot_location<0>>, opt<ws, kw_from, ws, must<slot_location<1>>>> {};
struct drop_action : seq<begin<ast::StmtKind::Drop, kw_drop>, ws, must<operand>, ws, must<kw_at>, ws,
                         must<slot_location<0>>> {};
struct discard_action : seq<begin<ast::StmtKind::Discard, kw_discard>, ws, must<operand>> {};
struct action : sor<ensure_action, copy_action, move_action, drop_action, discard_action> {};

struct pending_flag : kw_pending {};
struct hold_statement : seq<begin<ast::StmtKind::Hold, kw_hold>, ws, must<operand_list>, ws, must<kw_at>, ws,
                            must<slot_location<0>>, opt<ws, alias>> {};
struct lease_statement : seq<begin<ast::StmtKind::Lease, kw_lease>, ws, must<operand_list>, ws, must<kw_at>,
                             ws, must<slot_location<0>>, opt<ws, pending_flag>, opt<ws, alias>> {};
struct acquire_statement : seq<begin<ast::StmtKind::Acquire, kw_acquire>, ws, must<operand_list>, ws,
                               must<kw_at>, ws, must<slot_location<0>>> {};
struct label : string_literal {};
struct reserve_statement : seq<begin<ast::StmtKind::Reserve, kw_reserve>, ws, must<slot_location<0>>, ws,
                               must<slot_expression<0>>, ws, must<label>, opt<ws, alias>> {};
struct release_statement : seq<begin<ast::StmtKind::Release, kw_release>, ws, must<declared_name>> {};

/// `for NAME in FIRST..LAST { Item* }`; Close names what the body may hold.
template <typename Item, typename Close>
struct for_statement : seq<begin<ast::StmtKind::For, kw_for>, ws, must<declared_name>, ws, must<kw_in>, ws,
                           must<slot_expression<0>>, ws, must<range_dots>, ws, must<slot_expression<1>>, ws,
                           must<brace_open>, ws, star<Item, ws>, must<Close>> {};

// -- plans
struct close_actions : one<'}'> {};
struct action_item;
struct action_for : for_statement<action_item, close_actions> {};
struct action_item : sor<action, action_for> {};
template <ast::StmtKind K, typename Keyword>
struct action_block
    : seq<begin<K, Keyword>, ws, must<brace_open>, ws, star<action_item, ws>, must<close_actions>> {};
struct reclaim_block : action_block<ast::StmtKind::Reclaim, kw_reclaim> {};
struct enter_block : action_block<ast::StmtKind::Enter, kw_enter> {};
struct exit_block : action_block<ast::StmtKind::Exit, kw_exit> {};
struct plan_name : string_literal {};
struct close_plan : one<'}'> {};
struct plan_item : sor<reclaim_block, enter_block, exit_block, reserve_statement> {};
/// `in program` after a plan's name: the plan runs only inside programs.
struct program_context : seq<kw_in, ws, must<kw_program>> {};
struct plan_statement
    : seq<begin<ast::StmtKind::Plan, kw_plan>, ws, must<plan_name>, opt<ws, program_context>, ws,
          must<brace_open>, ws, star<plan_item, ws>, must<close_plan>> {};

// -- programs
struct close_program : one<'}'> {};
struct program_item;
struct program_for : for_statement<program_item, close_program> {};
struct scope_statement : seq<begin<ast::StmtKind::Scope, kw_scope>, ws, must<plan_name>, ws, must<brace_open>,
                             ws, star<program_item, ws>, must<close_program>> {};
struct run_statement : seq<begin<ast::StmtKind::Run, kw_run>, ws, must<plan_name>> {};
struct actions_statement : seq<begin<ast::StmtKind::Actions, kw_actions>, ws, must<plan_name>, ws,
                               must<brace_open>, ws, star<action_item, ws>, must<close_actions>> {};
struct program_item : sor<scope_statement, run_statement, actions_statement, acquire_statement,
                          hold_statement, reserve_statement, action, program_for> {};
struct program_statement : seq<begin<ast::StmtKind::Program, kw_program>, opt<ws, plan_name>, ws,
                               must<brace_open>, ws, star<program_item, ws>, must<close_program>> {};

// -- workloads (steps for fhr-plan solve): rules of their own file
} // namespace fhr::grammar
#include "fhr/dsl/workload_grammar.hpp"
namespace fhr::grammar {

// -- top level
struct close_top_for : one<'}'> {};
struct top_statement;
struct top_for : for_statement<top_statement, close_top_for> {};
struct top_statement
    : sor<const_statement, budget_statement, location_statement, devices_statement, value_statement, action,
          hold_statement, lease_statement, reserve_statement, release_statement, plan_statement,
          program_statement, workload_statement, top_for> {};

/// Skips to the next line that starts (in column 1) with a statement keyword.
struct rest_of_line : star<not_one<'\n'>> {};
struct statement_start : sor<kw_const, kw_budget, kw_location, kw_devices, kw_value, kw_ensure, kw_copy,
                             kw_move, kw_drop, kw_discard, kw_hold, kw_lease, kw_reserve, kw_release, kw_plan,
                             kw_program, kw_for, workload_statement_start> {};
struct recover : seq<plus<not_one<'\n'>>, star<not_at<one<'\n'>, statement_start>, one<'\n'>, rest_of_line>,
                     opt<one<'\n'>>> {};

/// Thrown (after the diagnostic is recorded) to abandon one statement.
struct SyntaxAbort {};

struct file : seq<ws, until<eof, sor<try_catch_type<SyntaxAbort, top_statement>, recover>, ws>> {};

// ---- error table ---------------------------------------------------------------
template <typename Rule>
struct error_info; // no definition: a raised rule must have a row

#define FHR_SYNTAX_ERROR(rule, code_name, text)                                                              \
  template <>                                                                                                \
  struct error_info<rule> {                                                                                  \
    static constexpr DiagCode code = DiagCode::code_name;                                                    \
    static constexpr const char *message = text;                                                             \
  }

FHR_SYNTAX_ERROR(declared_name, ExpectedName, "expected a name");
FHR_SYNTAX_ERROR(alias_name, ExpectedName, "expected a name after 'as'");
FHR_SYNTAX_ERROR(escape_char, BadEscape, "unknown escape (use \\\" \\\\ \\n \\t \\{ \\})");
FHR_SYNTAX_ERROR(string_close, UnterminatedString, "unterminated string (missing '\"' on this line)");
FHR_SYNTAX_ERROR(misspelled_unit, UnknownUnit, "unknown size unit");
FHR_SYNTAX_ERROR(expression, ExpectedExpression, "expected a size or number after '('");
FHR_SYNTAX_ERROR(paren_close, ExpectedToken, "expected ')'");
FHR_SYNTAX_ERROR(primary, ExpectedExpression, "expected a size or number after the operator");
FHR_SYNTAX_ERROR(term, ExpectedExpression, "expected a size or number after the operator");
FHR_SYNTAX_ERROR(slot_expression<0>, ExpectedExpression, "expected a size or number");
FHR_SYNTAX_ERROR(slot_expression<1>, ExpectedExpression, "expected the value's size");
FHR_SYNTAX_ERROR(slot_expression<2>, ExpectedExpression, "expected a size after 'storage'");
FHR_SYNTAX_ERROR(device_expression, ExpectedExpression, "expected a device number in cuda:{...}");
FHR_SYNTAX_ERROR(brace_close, ExpectedToken, "expected '}'");
FHR_SYNTAX_ERROR(slot_location<0>, ExpectedLocation, "expected a location (pageable, pinned or cuda:N)");
FHR_SYNTAX_ERROR(slot_location<1>, ExpectedLocation, "expected a location after 'from'");
FHR_SYNTAX_ERROR(bracket_close, ExpectedToken, "expected ']'");
FHR_SYNTAX_ERROR(index_first, ExpectedExpression, "expected an index, a range 'first..last' or '*'");
FHR_SYNTAX_ERROR(index_last, ExpectedExpression, "expected the end of the range after '..'");
FHR_SYNTAX_ERROR(operand, ExpectedOperand, "expected a value (name, name[i], name[a..b] or name[*])");
FHR_SYNTAX_ERROR(operand_list, ExpectedOperand, "expected a value (name, name[i], name[a..b] or name[*])");
FHR_SYNTAX_ERROR(equals, ExpectedToken, "expected '='");
FHR_SYNTAX_ERROR(placement, ExpectedPlacement,
                 "expected 'at LOCATION' (adopted) or 'source LOCATION' (reconstructible)");
FHR_SYNTAX_ERROR(kw_at, ExpectedToken, "expected 'at'");
FHR_SYNTAX_ERROR(kw_to, ExpectedToken, "expected 'to'");
FHR_SYNTAX_ERROR(kw_in, ExpectedToken, "expected 'in'");
FHR_SYNTAX_ERROR(kw_program, ExpectedToken,
                 "expected 'program' after 'in' (a plan that runs only in programs)");
FHR_SYNTAX_ERROR(range_dots, ExpectedToken, "expected '..'");
FHR_SYNTAX_ERROR(label, ExpectedString, "expected a label string");
FHR_SYNTAX_ERROR(plan_name, ExpectedString, "expected a name string");
FHR_SYNTAX_ERROR(brace_open, ExpectedToken, "expected '{'");
FHR_SYNTAX_ERROR(close_actions, ExpectedBlockItem,
                 "expected an action (ensure, copy, move, drop, discard), 'for' or '}'");
FHR_SYNTAX_ERROR(close_plan, ExpectedBlockItem,
                 "expected 'reclaim', 'reserve', 'enter', 'exit' or '}' in a plan");
FHR_SYNTAX_ERROR(close_program, ExpectedBlockItem,
                 "expected 'scope', 'run', 'actions', 'acquire', 'hold', 'reserve', an action, 'for' or '}'");
FHR_SYNTAX_ERROR(close_top_for, ExpectedBlockItem, "expected a statement or '}'");

#undef FHR_SYNTAX_ERROR

} // namespace fhr::grammar

// What PEGTL's grammar analysis (tests/grammar/analysis_test.cpp) needs to
// know of the rules written out by hand: whether they consume on success.
template <typename Name, typename Keywords>
struct tao::pegtl::analyze_traits<Name, fhr::grammar::identifier_except<Keywords>> : analyze_any_traits<> {};
template <typename Name>
struct tao::pegtl::analyze_traits<Name, fhr::grammar::digits> : analyze_any_traits<> {};
template <typename Name>
struct tao::pegtl::analyze_traits<Name, fhr::grammar::ws> : analyze_opt_traits<fhr::grammar::separator> {};
