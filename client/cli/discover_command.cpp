#include "client/cli/discover_command.hpp"

#include <boost/json.hpp>
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <cctype>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <set>

#include "client/cli/vigild_api.hpp"
#include "onvif/discovery.hpp"
#include "common/command_line.hpp"
#include "common/exit_codes.hpp"
#include "common/percent_encoding.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;
namespace po = boost::program_options;

namespace vigil::client {
namespace {

constexpr CommandHelp kHelp{
    "vigil camera discover",
    "Usage: vigil [--token TOKEN] camera discover [--timeout S] [--probe HOST:PORT] [--user U [--password P]]\n"
    "                                    [--json] [--add [--data DIR | --http HOST:PORT]]\n\n"
    "Finds ONVIF cameras (WS-Discovery: a Probe to 239.255.255.250:3702, which reaches only this host's\n"
    "network segment, or to --probe's address), reads each one's profiles and their RTSP URIs, and offers\n"
    "the profile of most pixels as the main stream and the one of fewest as the substream. --user (and\n"
    "--password, else $VIGIL_ONVIF_PASSWORD) signs the requests (WS-Security UsernameToken digest).\n"
    "Credentials are never printed. --add adds every camera found as a pulled camera of vigild, named\n"
    "after the device (its URLs carry --user and --password); an existing camera is left as it is.\n"
    "See docs/onvif.md.\n",
    "\nExit: 0 ok (also when nothing answered), 1 a camera could not be read or added, 2 usage, 3 vigild\n"
    "unreachable (--add), 4 refused: the token is not an admin's.\n"};

std::string unique_name(const std::string& base, std::set<std::string>& taken) {
  std::string name = base;
  for (int n = 2; !taken.insert(name).second; ++n) {
    const auto suffix = "-" + std::to_string(n);
    name = base.substr(0, 64 - suffix.size()) + suffix;
  }
  return name;
}

void print_table(const std::vector<onvif::Device>& devices) {
  if (devices.empty()) {
    std::cout << "no ONVIF camera answered\n";
    return;
  }
  for (const auto& d : devices) {
    std::cout << (d.match.name.empty() ? "(no name)" : d.match.name) << "  " << d.match.hardware << "  " << d.address
              << "\n";
    if (!d.error.empty()) {
      std::cout << "  error: " << d.error << "\n";
      continue;
    }
    for (const auto& p : d.profiles) {
      const char* role = p.uri == d.main_uri ? "main" : p.uri == d.substream_uri ? "sub" : "";
      std::cout << "  " << std::left << std::setw(5) << role << std::setw(16) << p.name << std::setw(6) << p.encoding
                << std::setw(10) << (std::to_string(p.width) + "x" + std::to_string(p.height)) << std::setw(8)
                << (p.frame_rate > 0 ? std::to_string(static_cast<int>(p.frame_rate)) + "fps" : "-") << std::setw(11)
                << (p.bitrate_kbps > 0 ? std::to_string(p.bitrate_kbps) + "kbps" : "-")
                << onvif::without_credentials(p.uri) << "\n";
    }
  }
}

int add_all(HttpClient& api, const std::vector<onvif::Device>& devices, const onvif::Credentials& credentials) {
  int rc = exit_code::kOk;
  std::set<std::string> taken;
  for (const auto& d : devices) {
    if (!d.error.empty() || d.main_uri.empty()) continue;
    const auto name = unique_name(camera_name_from(d.match.name.empty() ? d.address : d.match.name), taken);
    json::object body{{"name", name}, {"url", with_credentials(d.main_uri, credentials.user, credentials.password)}};
    if (!d.substream_uri.empty()) {
      body["substream_url"] = with_credentials(d.substream_uri, credentials.user, credentials.password);
    }
    const auto answer = api.request(http::verb::post, "/api/v1/cameras", json::serialize(body));
    if (answer.status == 409) {
      std::cout << "camera " << name << " exists: left as it is\n";
      continue;
    }
    if (answer.status != 200 && answer.status != 201) {
      const int failed = exit_for_answer(kHelp.command, answer);
      if (failed == exit_code::kRefused) return failed;
      rc = exit_code::kFailed;
      continue;
    }
    std::cout << "camera " << name << " added: " << onvif::without_credentials(d.main_uri)
              << (d.substream_uri.empty() ? "" : ", substream " + onvif::without_credentials(d.substream_uri)) << "\n";
  }
  return rc;
}

}  // namespace

std::string camera_name_from(std::string_view name) {
  std::string out;
  for (const unsigned char c : name) {
    const bool ok = std::isalnum(c) || c == '.' || c == '_' || c == '-';
    if (out.empty() && !std::isalnum(c)) continue;
    if (out.size() == 64) break;
    out += ok ? static_cast<char>(c) : '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "camera" : out;
}

std::string with_credentials(const std::string& url, const std::string& user, const std::string& password) {
  const auto scheme = url.find("://");
  if (user.empty() || scheme == std::string::npos) return url;
  const auto host_start = scheme + 3;
  const auto path = url.find('/', host_start);
  if (url.substr(host_start, path == std::string::npos ? std::string::npos : path - host_start).find('@') !=
      std::string::npos) {
    return url;
  }
  return url.substr(0, host_start) + percent_encode(user) + ":" + percent_encode(password) + "@" +
         url.substr(host_start);
}

int discover_main(const std::string& token, const std::vector<std::string>& args) {
  VigildApiOptions where;
  onvif::DiscoveryOptions options;
  double timeout_s = 3;
  double device_timeout_s = 5;
  bool as_json = false;
  bool add = false;
  po::options_description described("Options");
  add_vigild_api_options(described, where);
  described.add_options()("timeout", po::value(&timeout_s)->value_name("S"),
                          "how long answers to the probe are gathered (default 3, at most 60)")(
      "device-timeout", po::value(&device_timeout_s)->value_name("S"),
      "all of one camera's requests together (default 5, at most 60)")(
      "probe", po::value(&options.probe_address)->value_name("HOST:PORT"),
      "probe this address instead of the WS-Discovery multicast group")(
      "user", po::value(&options.credentials.user)->value_name("U"), "the cameras' ONVIF user")(
      "password", po::value(&options.credentials.password)->value_name("P"),
      "its password (else $VIGIL_ONVIF_PASSWORD)")("json", po::bool_switch(&as_json),
                                                   "print JSON")("add", po::bool_switch(&add),
                                                                 "add every camera found to vigild");
  if (auto rc = parse_command_line(args, described, kHelp, nullptr, 0)) return *rc;
  if (!(timeout_s > 0 && timeout_s <= 60) || !(device_timeout_s > 0 && device_timeout_s <= 60)) {
    return usage_error(kHelp, "--timeout and --device-timeout are seconds in (0, 60]");
  }
  if (options.credentials.password.empty() && !options.credentials.user.empty()) {
    if (const char* p = std::getenv("VIGIL_ONVIF_PASSWORD")) options.credentials.password = p;
  }
  if (!options.credentials.password.empty() && options.credentials.user.empty()) {
    return usage_error(kHelp, "--password goes with --user");
  }
  options.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 1000));
  options.device_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(device_timeout_s * 1000));
  std::vector<onvif::Device> devices;
  try {
    devices = onvif::discover(options);
  } catch (const onvif::OnvifError& e) {
    std::cerr << kHelp.command << ": " << e.what() << "\n";
    return exit_code::kFailed;
  } catch (const boost::system::system_error& e) {
    std::cerr << kHelp.command << ": " << e.code().message() << "\n";
    return exit_code::kFailed;
  }
  if (as_json) {
    std::cout << json::serialize(onvif::devices_json(devices)) << "\n";
  } else {
    print_table(devices);
  }
  int rc = exit_code::kOk;
  for (const auto& d : devices) {
    if (!d.error.empty()) {
      std::cerr << kHelp.command << ": " << (d.match.name.empty() ? d.address : d.match.name) << ": " << d.error
                << "\n";
      rc = exit_code::kFailed;
    }
  }
  if (add) {
    try {
      auto api = connect_vigild_api(where, token);
      const int added = add_all(api, devices, options.credentials);
      if (added != exit_code::kOk) rc = added;
    } catch (const VigildUnreachable& e) {
      std::cerr << kHelp.command << ": " << e.what() << "\n";
      return exit_code::kUnreachable;
    }
  }
  return rc;
}

}  // namespace vigil::client
