#pragma once
// ONVIF camera discovery: a WS-Discovery Probe (SOAP over UDP, to 239.255.255.250:3702 or to one
// address), the ProbeMatches gathered until a timeout, then each device asked over HTTP for its
// media service (GetCapabilities), its profiles (GetProfiles) and each profile's RTSP URI
// (GetStreamUri). The main stream is the profile of most pixels, the substream the one of fewest.
// Every size is bounded (a reply of 1 MiB, 64 profiles, 256 devices) and so is the time: the
// probe's timeout, then each device's own (devices are read in parallel, 16 at a time).
// Thread: the caller's (blocking); discover() reads up to kParallelDevices devices on threads of
// its own. Errors: probe() throws OnvifError for a socket that cannot be
// opened or a bad address; read_device() throws OnvifError (NotAuthorized for credentials the
// device refuses); discover() catches per device into Device::error, so one broken camera never
// hides the others.
#include <boost/json/value.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "onvif/soap.hpp"

namespace vigil::onvif {

struct DiscoveryOptions {
  std::chrono::milliseconds timeout{3000};         // how long ProbeMatches are gathered
  std::string probe_address;                       // HOST:PORT; empty: the WS-Discovery multicast group
  std::chrono::milliseconds device_timeout{5000};  // all of one device's requests together
  Credentials credentials;
};

struct Device {
  ProbeMatch match;
  std::string address;  // host of its first http:// XAddr
  std::vector<Profile> profiles;
  std::string main_uri;       // "" when no profile has a URI
  std::string substream_uri;  // "" with fewer than two profiles
  std::string error;          // why it could not be read; "" when it was
};

// A device (or its service) that did not answer in time.
struct DeviceTimeout : OnvifError {
  using OnvifError::OnvifError;
};

constexpr std::size_t kMaxReplyBytes = std::size_t{1} << 20;
constexpr std::size_t kParallelDevices = 16;  // devices read at once by discover()

std::vector<ProbeMatch> probe(const DiscoveryOptions& options);
Device read_device(const ProbeMatch& match, const Credentials& credentials, std::chrono::milliseconds timeout);
std::vector<Device> discover(const DiscoveryOptions& options);

// Main and substream among DEVICE's profiles (those with a URI): most and fewest pixels.
void choose_streams(Device& device);

// {"devices": [...]} as `vigil camera discover --json` prints it (URIs without credentials).
boost::json::value devices_json(const std::vector<Device>& devices);

// One POST of BODY (text/xml) to URL (http:// only) within TIMEOUT; the reply's body, at most
// kMaxReplyBytes. A SOAP fault comes back as the body (HTTP 400/500 carry them).
std::string soap_post(const std::string& url, const std::string& body, std::chrono::milliseconds timeout);

}  // namespace vigil::onvif
