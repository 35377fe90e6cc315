#include "catalog/conninfo.hpp"

#include <libpq-fe.h>

#include <memory>

namespace vigil::catalog {
namespace {

std::string quoted(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "'";
}

struct Parsed {
  std::unique_ptr<PQconninfoOption, void (*)(PQconninfoOption*)> options{nullptr, PQconninfoFree};
  explicit Parsed(const std::string& conninfo) {
    char* error = nullptr;
    options.reset(PQconninfoParse(conninfo.c_str(), &error));
    if (error) PQfreemem(error);
  }
  const char* value(const std::string& keyword) const {
    for (auto* o = options.get(); o && o->keyword; ++o) {
      if (keyword == o->keyword) return o->val;
    }
    return nullptr;
  }
};

}  // namespace

std::string with_settings(const std::string& conninfo, const ConninfoSettings& settings) {
  const Parsed parsed(conninfo);
  if (!parsed.options) return conninfo;
  std::string out;
  const auto add = [&out](const std::string& keyword, const std::string& value) {
    out += (out.empty() ? "" : " ") + keyword + "=" + quoted(value);
  };
  for (auto* o = parsed.options.get(); o->keyword; ++o) {
    if (!o->val) continue;
    bool replaced = false;
    for (const auto& [keyword, value] : settings) replaced = replaced || keyword == o->keyword;
    if (!replaced) add(o->keyword, o->val);
  }
  for (const auto& [keyword, value] : settings) add(keyword, value);
  return out;
}

std::string with_session_limits(const std::string& conninfo, int connect_timeout_s) {
  const Parsed parsed(conninfo);
  if (!parsed.options) return conninfo;
  ConninfoSettings settings;
  const auto unless_named = [&](const std::string& keyword, const std::string& value) {
    if (!parsed.value(keyword)) settings.emplace_back(keyword, value);
  };
  unless_named("connect_timeout", std::to_string(connect_timeout_s));
  unless_named("keepalives", "1");
  unless_named("keepalives_idle", "5");
  unless_named("keepalives_interval", "2");
  unless_named("keepalives_count", "3");
  unless_named("tcp_user_timeout", "10000");
  // Server options the operator gave stay; ours follow, unless they set the same one.
  const std::string options = parsed.value("options") ? parsed.value("options") : "";
  if (options.find("idle_in_transaction_session_timeout") == std::string::npos) {
    const auto ours = "-c idle_in_transaction_session_timeout=" + std::to_string(kIdleInTransactionTimeoutMs);
    settings.emplace_back("options", options.empty() ? ours : options + " " + ours);
  }
  return with_settings(conninfo, settings);
}

}  // namespace vigil::catalog
