#include "client/cli/token_command.hpp"

#include <boost/json.hpp>
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "client/cli/vigild_api.hpp"
#include "common/command_line.hpp"
#include "common/exit_codes.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;
namespace po = boost::program_options;

namespace vigil::client {
namespace {

constexpr CommandHelp kHelp{
    "vigil token",
    "Usage: vigil [--token TOKEN] token create --role recorder|viewer|events|admin [--camera NAME]...\n"
    "                                          [--label TEXT] [--expires-in DAYS]\n"
    "       vigil [--token TOKEN] token list\n"
    "       vigil [--token TOKEN] token revoke ID\n"
    "       (each with [--data DIR | --http HOST:PORT])\n\n"
    "Bearer tokens for vigild's HTTP API and wire protocol. recorder: may record streams and post\n"
    "events; viewer: may play, export and query; events: may post events only (no video); admin:\n"
    "everything. --camera (repeatable) limits the token to those cameras (default: every camera).\n"
    "`create` prints the token once (only its SHA-256 is stored). A revoked token stops working within 5 s.\n"
    "Clients take a token with --token TOKEN, VIGIL_TOKEN, or --token-file FILE (default: ./data/admin.token,\n"
    "which vigild writes on first start); HTTP clients send 'Authorization: Bearer TOKEN'.\n"
    "Goes through vigild's HTTP API (/api/v1/tokens) with an admin token.\n",
    "\nExit: 0 ok, 1 failed (e.g. no such token), 2 usage, 3 vigild unreachable, 4 refused: the token is\n"
    "not an admin's.\n"};

constexpr double kMaxExpiresInDays = 36500;

// A token's camera set as `token list` shows it: "*" for every camera, else the names.
std::string camera_list(const json::value& cameras) {
  if (cameras.is_null()) return "*";
  std::string out;
  for (const auto& c : cameras.as_array()) {
    if (!out.empty()) out += ',';
    out += c.as_string().c_str();
  }
  return out;
}

std::string optional_time(const json::value& us) { return us.is_null() ? "-" : utc_time(us.to_number<std::int64_t>()); }

int create_token(HttpClient& api, const std::string& role, const std::string& label,
                 std::optional<double> expires_in_days, const std::vector<std::string>& cameras) {
  json::object body{{"role", role}, {"label", label}};
  if (!cameras.empty()) {
    json::array arr;
    for (const auto& c : cameras) arr.push_back(json::string(c));
    body["cameras"] = std::move(arr);
  }
  if (expires_in_days) body["expires_in_s"] = static_cast<std::int64_t>(std::ceil(*expires_in_days * 86400));
  const auto answer = api.request(http::verb::post, "/api/v1/tokens", json::serialize(body));
  if (answer.status != 201) return exit_for_answer(kHelp.command, answer);
  const auto made = json::parse(answer.body).as_object();
  std::cerr << "token " << made.at("id").to_number<std::int64_t>() << " (" << role
            << (cameras.empty() ? std::string(", every camera") : ", cameras " + camera_list(made.at("cameras")))
            << ") created; it is shown only this once:\n";
  std::cout << made.at("token").as_string().c_str() << "\n";
  return exit_code::kOk;
}

int revoke_token(HttpClient& api, std::int64_t id) {
  const auto answer = api.request(http::verb::delete_, "/api/v1/tokens/" + std::to_string(id));
  if (answer.status != 200) return exit_for_answer(kHelp.command, answer);
  std::cout << "token " << id << " revoked\n";
  return exit_code::kOk;
}

int list_tokens(HttpClient& api) {
  const auto answer = api.request(http::verb::get, "/api/v1/tokens");
  if (answer.status != 200) return exit_for_answer(kHelp.command, answer);
  std::cout << std::left << std::setw(6) << "ID" << std::setw(10) << "ROLE" << std::setw(22) << "CREATED"
            << std::setw(22) << "EXPIRES" << std::setw(22) << "REVOKED" << std::setw(24) << "CAMERAS"
            << "LABEL\n";
  const auto doc = json::parse(answer.body);
  for (const auto& v : doc.at("tokens").as_array()) {
    const auto& t = v.as_object();
    std::cout << std::setw(6) << t.at("id").to_number<std::int64_t>() << std::setw(10)
              << t.at("role").as_string().c_str() << std::setw(22)
              << utc_time(t.at("created_at_us").to_number<std::int64_t>()) << std::setw(22)
              << optional_time(t.at("expires_at_us")) << std::setw(22) << optional_time(t.at("revoked_at_us"))
              << std::setw(24) << (t.contains("cameras") ? camera_list(t.at("cameras")) : std::string("*")) << " "
              << t.at("label").as_string().c_str() << "\n";
  }
  return exit_code::kOk;
}

// A token id as `token list` shows it; nullopt for anything else.
std::optional<std::int64_t> token_id(const std::string& text) {
  try {
    std::size_t used = 0;
    const auto id = std::stoll(text, &used);
    if (used == text.size() && id > 0) return id;
  } catch (const std::exception&) {
    // not a number: said by the caller
  }
  return std::nullopt;
}

}  // namespace

int token_main(const std::string& token, const std::vector<std::string>& args) {
  VigildApiOptions where;
  std::string role, label;
  std::optional<double> expires_in_days;
  std::vector<std::string> cameras;
  po::options_description options("Options");
  add_vigild_api_options(options, where);
  options.add_options()                                                                            //
      ("role", po::value(&role)->value_name("ROLE"), "create: recorder, viewer, events or admin")  //
      ("camera", po::value(&cameras)->value_name("NAME")->composing(),
       "create: limit the token to this camera; repeatable (default: every camera)")                              //
      ("label", po::value(&label)->value_name("TEXT"), "create: what the token is for (at most 200 characters)")  //
      ("expires-in", po::value<double>()->value_name("DAYS")->notifier([&](double d) { expires_in_days = d; }),
       "create: the token stops working after DAYS (0 < DAYS <= 36500; default never)");
  std::vector<std::string> words;
  if (auto rc = parse_command_line(args, options, kHelp, &words, 2)) return *rc;
  const std::string verb = words.empty() ? "" : words[0];
  const std::size_t want = verb == "create" || verb == "list" ? 1 : verb == "revoke" ? 2 : 0;
  if (want == 0) return usage_error(kHelp, "say create, list or revoke");
  if (words.size() != want) return usage_error(kHelp, verb + " takes " + std::to_string(want - 1) + " argument(s)");
  if (verb == "create" && role != "recorder" && role != "viewer" && role != "events" && role != "admin") {
    return usage_error(kHelp, "--role must be recorder, viewer, events or admin");
  }
  if (verb != "create" && !cameras.empty()) return usage_error(kHelp, "--camera applies to create");
  if (expires_in_days && !(*expires_in_days > 0 && *expires_in_days <= kMaxExpiresInDays)) {
    return usage_error(kHelp, "--expires-in takes a number of days (0 < DAYS <= 36500)");
  }
  const auto id = verb == "revoke" ? token_id(words[1]) : std::nullopt;
  if (verb == "revoke" && !id) return usage_error(kHelp, "revoke takes a token id (see vigil token list)");
  try {
    auto api = connect_vigild_api(where, token);
    if (verb == "create") return create_token(api, role, label, expires_in_days, cameras);
    if (verb == "revoke") return revoke_token(api, *id);
    return list_tokens(api);
  } catch (const VigildUnreachable& e) {
    std::cerr << kHelp.command << ": " << e.what() << "\n";
    return exit_code::kUnreachable;
  }
}

}  // namespace vigil::client
