#pragma once
/// \file
/// The workload statements of the `.fhr` grammar (docs/language.md,
/// "Workloads"): what a computation needs, step by step, for
/// `fhr-plan solve`. Included by grammar.hpp before its top level, so the
/// rules use the lexical, expression, location and operand rules there.
///
///     tier cuda:0 to pinned
///     step "ks-{i}" { need rk[i], ct at cuda:0; workspace cuda:0 105 MiB "key-switch"; compute 3.9 ms }
///
/// `tier` adds one fallback location to a location's spill list (in file
/// order); a step's items may be separated by `;`.

namespace fhr::grammar {

struct kw_tier : TAO_PEGTL_KEYWORD("tier") {};
struct kw_step : TAO_PEGTL_KEYWORD("step") {};
struct kw_need : TAO_PEGTL_KEYWORD("need") {};
struct kw_workspace : TAO_PEGTL_KEYWORD("workspace") {};
struct kw_compute : TAO_PEGTL_KEYWORD("compute") {};

/// Fallback of a tier: its own rule, so that a missing one has its message.
template <int Slot>
struct tier_location : slot_location<Slot> {};
struct tier_statement : seq<begin<ast::StmtKind::Tier, kw_tier>, ws, must<slot_location<0>>, ws, must<kw_to>,
                            ws, must<tier_location<1>>> {};

struct need_statement : seq<begin<ast::StmtKind::Need, kw_need>, ws, must<operand_list>, ws, must<kw_at>, ws,
                            must<slot_location<0>>> {};
struct workspace_size : slot_expression<0> {};
struct workspace_statement : seq<begin<ast::StmtKind::Workspace, kw_workspace>, ws, must<slot_location<0>>,
                                 ws, must<workspace_size>, opt<ws, label>> {};
/// A duration: a decimal number and a time unit (`3.9 ms`, `120 us`).
struct time_unit
    : seq<sor<TAO_PEGTL_STRING("ms"), TAO_PEGTL_STRING("us"), TAO_PEGTL_STRING("ns"), TAO_PEGTL_STRING("s")>,
          not_at<identifier_other>> {};
struct duration_number : seq<digits, opt<one<'.'>, digits>> {};
struct duration : seq<duration_number, star<blank>, must<time_unit>> {};
struct compute_statement : seq<begin<ast::StmtKind::Compute, kw_compute>, ws, must<duration>> {};

struct close_step : one<'}'> {};
struct step_item : sor<need_statement, workspace_statement, compute_statement> {};
struct step_separator : one<';'> {};
struct step_statement : seq<begin<ast::StmtKind::Step, kw_step>, ws, must<plan_name>, ws, must<brace_open>,
                            ws, star<step_item, ws, opt<step_separator, ws>>, must<close_step>> {};

/// The workload statements a file's top level (and its `for`) may hold.
struct workload_statement : sor<tier_statement, step_statement> {};
/// Their first words, for recovery after a syntax error.
struct workload_statement_start : sor<kw_tier, kw_step> {};

template <typename Rule>
struct error_info;

#define FHR_WORKLOAD_SYNTAX_ERROR(rule, code_name, text)                                                     \
  template <>                                                                                                \
  struct error_info<rule> {                                                                                  \
    static constexpr DiagCode code = DiagCode::code_name;                                                    \
    static constexpr const char *message = text;                                                             \
  }
FHR_WORKLOAD_SYNTAX_ERROR(tier_location<1>, ExpectedLocation, "expected the fallback location after 'to'");
FHR_WORKLOAD_SYNTAX_ERROR(workspace_size, ExpectedExpression, "expected the workspace's size");
FHR_WORKLOAD_SYNTAX_ERROR(duration, ExpectedDuration, "expected a duration (a number and s, ms, us or ns)");
FHR_WORKLOAD_SYNTAX_ERROR(time_unit, ExpectedDuration, "expected a time unit (s, ms, us or ns)");
FHR_WORKLOAD_SYNTAX_ERROR(close_step, ExpectedBlockItem,
                          "expected 'need', 'workspace', 'compute' or '}' in a step");
#undef FHR_WORKLOAD_SYNTAX_ERROR

} // namespace fhr::grammar
