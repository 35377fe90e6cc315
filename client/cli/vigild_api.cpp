#include "client/cli/vigild_api.hpp"

#include <boost/json.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "common/exit_codes.hpp"

namespace fs = std::filesystem;
namespace po = boost::program_options;

namespace vigil::client {
namespace {

// The admin API answers small documents quickly; a catalog stall shows as its own 503 first.
constexpr std::chrono::seconds kApiTimeout{30};

std::string http_address_of(const VigildApiOptions& options) {
  if (!options.http.empty()) return options.http;
  const auto file = fs::path(options.data) / "run" / "endpoints.json";
  std::ifstream in(file);
  if (!in) {
    throw VigildUnreachable("vigild is not running with --data " + options.data + " (no " + file.string() +
                            "); start it, or give --data DIR or --http HOST:PORT");
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    const auto doc = boost::json::parse(text.str());
    std::string http(doc.at("http").as_string());
    if (http.starts_with("http://")) http = http.substr(7);
    // A vigild serving HTTPS says so; its certificate is checked against --tls-ca.
    if (const auto* tls = doc.as_object().if_contains("http_tls"); tls && tls->is_bool() && tls->as_bool())
      http = "https://" + http;
    return http;
  } catch (const std::exception& e) {
    throw std::runtime_error(file.string() + " does not name vigild's HTTP address: " + e.what());
  }
}

std::string first_word_of(const fs::path& file) {
  std::ifstream in(file);
  std::string word;
  in >> word;
  return word;
}

}  // namespace

void add_vigild_api_options(po::options_description& options, VigildApiOptions& target) {
  options.add_options()  //
      ("data", po::value(&target.data)->value_name("DIR")->default_value(target.data),
       "vigild's data directory: its HTTP address (DIR/run/endpoints.json) and, when no token is given, "
       "its admin token (DIR/admin.token)")  //
      ("http", po::value(&target.http)->value_name("HOST:PORT"),
       "vigild's HTTP address (default: from DIR/run/endpoints.json); https://HOST:PORT for a vigild started "
       "with --http-tls-cert (its certificate checked against vigil --tls-ca)");
}

HttpClient connect_vigild_api(const VigildApiOptions& options, const std::string& token) {
  const auto address = http_address_of(options);
  const auto bearer = token.empty() ? first_word_of(fs::path(options.data) / "admin.token") : token;
  return HttpClient(address, bearer, kApiTimeout);
}

std::string error_text(const std::string& body) {
  try {
    const auto doc = boost::json::parse(body);
    if (const auto* e = doc.as_object().if_contains("error"); e && e->is_string()) return std::string(e->as_string());
  } catch (const std::exception&) {
    // not JSON: the body says it
  }
  return body;
}

int exit_for_answer(std::string_view command, const HttpAnswer& answer, std::string_view role) {
  const auto reason = error_text(answer.body);
  if (answer.status == 401 || answer.status == 403) {
    std::cerr << command << ": needs " << role << " token (give --token TOKEN, VIGIL_TOKEN or --token-file FILE; "
              << "default DATA/admin.token): " << reason << "\n";
    return exit_code::kRefused;
  }
  std::cerr << command << ": " << reason << "\n";
  return answer.status == 400 ? exit_code::kUsage : exit_code::kFailed;
}

std::string utc_time(std::int64_t us) {
  const std::time_t t = static_cast<std::time_t>(us / 1'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::ostringstream out;
  out << std::put_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  return out.str();
}

}  // namespace vigil::client
