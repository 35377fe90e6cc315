#include "tests/support/onvif_simulator.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include "common/percent_encoding.hpp"
#include "onvif/soap.hpp"
#include "onvif/xml_tree.hpp"

namespace vigil::test {
namespace asio = boost::asio;
namespace http = boost::beast::http;
using onvif::parse_xml;
using onvif::XmlElement;

namespace {

std::string envelope(const std::string& body) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
         "<env:Envelope xmlns:env=\"http://www.w3.org/2003/05/soap-envelope\" "
         "xmlns:tds=\"http://www.onvif.org/ver10/device/wsdl\" xmlns:trt=\"http://www.onvif.org/ver10/media/wsdl\" "
         "xmlns:tt=\"http://www.onvif.org/ver10/schema\" xmlns:ter=\"http://www.onvif.org/ver10/error\">"
         "<env:Body>" +
         body + "</env:Body></env:Envelope>";
}

std::string profile(const std::string& token, int width, int height, int kbps) {
  return "<trt:Profiles token=\"" + token + "\" fixed=\"true\"><tt:Name>" + token +
         "</tt:Name><tt:VideoEncoderConfiguration token=\"enc_" + token + "\"><tt:Name>enc_" + token +
         "</tt:Name><tt:UseCount>1</tt:UseCount><tt:Encoding>H264</tt:Encoding><tt:Resolution><tt:Width>" +
         std::to_string(width) + "</tt:Width><tt:Height>" + std::to_string(height) +
         "</tt:Height></tt:Resolution><tt:Quality>5</tt:Quality><tt:RateControl><tt:FrameRateLimit>25"
         "</tt:FrameRateLimit><tt:EncodingInterval>1</tt:EncodingInterval><tt:BitrateLimit>" +
         std::to_string(kbps) + "</tt:BitrateLimit></tt:RateControl></tt:VideoEncoderConfiguration></trt:Profiles>";
}

}  // namespace

OnvifSimulator::OnvifSimulator(OnvifSimulatorOptions options)
    : options_(std::move(options)),
      udp_(io_, asio::ip::udp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
      acceptor_(io_, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
      datagram_(65536) {
  udp_port_ = udp_.local_endpoint().port();
  http_port_ = acceptor_.local_endpoint().port();
  receive_probe();
  accept();
  io_thread_ = std::thread([this] { io_.run(); });
}

OnvifSimulator::~OnvifSimulator() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  stopped_cv_.notify_all();
  io_.stop();
  io_thread_.join();
  for (auto& t : connections_) t.join();
}

void OnvifSimulator::receive_probe() {
  udp_.async_receive_from(asio::buffer(datagram_), from_, [this](boost::system::error_code ec, std::size_t n) {
    if (ec) return;
    std::string relates;
    bool is_probe = false;
    try {
      const auto doc = parse_xml(std::string_view(datagram_.data(), n));
      relates = std::string(doc.text_of("MessageID"));
      is_probe = doc.find("Probe") != nullptr;
    } catch (const std::exception&) {}
    if (is_probe) {
      auto match = [this](std::uint16_t port, const std::string& name) {
        return "<d:ProbeMatch><wsa:EndpointReference><wsa:Address>urn:uuid:5f5a69c2-e0ae-504f-829b-" +
               std::to_string(100000000000 + port) +
               "</wsa:Address></wsa:EndpointReference><d:Types>dn:NetworkVideoTransmitter</d:Types><d:Scopes>"
               "onvif://www.onvif.org/type/video_encoder onvif://www.onvif.org/name/" +
               percent_encode(name) + " onvif://www.onvif.org/hardware/" + percent_encode(options_.hardware) +
               "</d:Scopes><d:XAddrs>http://127.0.0.1:" + std::to_string(port) +
               "/onvif/device_service</d:XAddrs><d:MetadataVersion>1</d:MetadataVersion></d:ProbeMatch>";
      };
      std::string reply =
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
          "<SOAP-ENV:Envelope xmlns:SOAP-ENV=\"http://www.w3.org/2003/05/soap-envelope\" "
          "xmlns:wsa=\"http://schemas.xmlsoap.org/ws/2004/08/addressing\" "
          "xmlns:d=\"http://schemas.xmlsoap.org/ws/2005/04/discovery\" "
          "xmlns:dn=\"http://www.onvif.org/ver10/network/wsdl\"><SOAP-ENV:Header>"
          "<wsa:MessageID>urn:uuid:00000000-0000-4000-8000-000000000002</wsa:MessageID><wsa:RelatesTo>" +
          relates +
          "</wsa:RelatesTo><wsa:Action>http://schemas.xmlsoap.org/ws/2005/04/discovery/ProbeMatches</wsa:Action>"
          "</SOAP-ENV:Header><SOAP-ENV:Body><d:ProbeMatches>" +
          match(http_port_, options_.name);
      for (const auto port : options_.also_announce) reply += match(port, options_.name + " " + std::to_string(port));
      reply += "</d:ProbeMatches></SOAP-ENV:Body></SOAP-ENV:Envelope>";
      boost::system::error_code ignored;
      udp_.send_to(asio::buffer(reply), from_, 0, ignored);
    }
    receive_probe();
  });
}

void OnvifSimulator::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, asio::ip::tcp::socket socket) {
    if (ec) return;
    std::lock_guard lock(mutex_);
    connections_.emplace_back([this, s = std::move(socket)]() mutable { serve(std::move(s)); });
    accept();
  });
}

void OnvifSimulator::serve(asio::ip::tcp::socket socket) {
  boost::beast::flat_buffer buffer;
  http::request<http::string_body> req;
  boost::system::error_code ec;
  http::read(socket, buffer, req, ec);
  if (ec) return;
  ++requests_;
  if (options_.silent) {
    // A camera that takes the request and never answers: held until the simulator stops.
    std::unique_lock lock(mutex_);
    stopped_cv_.wait(lock, [this] { return stopped_; });
    return;
  }
  int status = 200;
  http::response<http::string_body> res;
  res.body() = answer(req.body(), status);
  res.result(status);
  res.set(http::field::content_type, "application/soap+xml; charset=utf-8");
  res.keep_alive(false);
  res.prepare_payload();
  http::write(socket, res, ec);
  socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
}

std::string OnvifSimulator::answer(const std::string& request, int& status) {
  XmlElement doc;
  try {
    doc = parse_xml(request);
  } catch (const std::exception&) {
    status = 400;
    return "not XML";
  }
  if (!options_.user.empty()) {
    bool ok = false;
    try {
      const auto* token = doc.find("UsernameToken");
      if (token != nullptr && token->text_of("Username") == options_.user) {
        const auto nonce = onvif::base64_decode(token->text_of("Nonce"));
        ok = onvif::password_digest(nonce, token->text_of("Created"), options_.password) == token->text_of("Password");
      }
    } catch (const std::exception&) {}
    if (!ok) {
      status = 400;
      return envelope(
          "<env:Fault><env:Code><env:Value>env:Sender</env:Value><env:Subcode><env:Value>ter:NotAuthorized"
          "</env:Value></env:Subcode></env:Code><env:Reason><env:Text xml:lang=\"en\">Sender not authorized"
          "</env:Text></env:Reason></env:Fault>");
    }
  }
  const std::string base = "http://127.0.0.1:" + std::to_string(http_port_);
  if (doc.find("GetCapabilities") != nullptr) {
    return envelope("<tds:GetCapabilitiesResponse><tds:Capabilities><tt:Device><tt:XAddr>" + base +
                    "/onvif/device_service</tt:XAddr></tt:Device><tt:Media><tt:XAddr>" + base +
                    "/onvif/media_service</tt:XAddr></tt:Media></tds:Capabilities></tds:GetCapabilitiesResponse>");
  }
  if (doc.find("GetProfiles") != nullptr) {
    if (options_.malformed) {
      return envelope("<trt:GetProfilesResponse>" + profile("main", 1920, 1080, 4096)).substr(0, 400) + "<<</trt:";
    }
    return envelope("<trt:GetProfilesResponse>" + profile("main", 1920, 1080, 4096) + profile("sub", 640, 360, 512) +
                    "</trt:GetProfilesResponse>");
  }
  if (doc.find("GetStreamUri") != nullptr) {
    const std::string token(doc.text_of("ProfileToken"));
    if (token != "main" && token != "sub") {
      status = 400;
      return envelope(
          "<env:Fault><env:Code><env:Value>env:Sender</env:Value><env:Subcode><env:Value>ter:InvalidArgVal"
          "</env:Value></env:Subcode></env:Code><env:Reason><env:Text>No such profile</env:Text></env:Reason>"
          "</env:Fault>");
    }
    return envelope("<trt:GetStreamUriResponse><trt:MediaUri><tt:Uri>rtsp://127.0.0.1:" +
                    std::to_string(options_.rtsp_port) + "/" + token +
                    "</tt:Uri><tt:InvalidAfterConnect>false</tt:InvalidAfterConnect><tt:InvalidAfterReboot>false"
                    "</tt:InvalidAfterReboot><tt:Timeout>PT0S</tt:Timeout></trt:MediaUri></trt:GetStreamUriResponse>");
  }
  status = 400;
  return envelope(
      "<env:Fault><env:Code><env:Value>env:Receiver</env:Value><env:Subcode><env:Value>ter:ActionNotSupported"
      "</env:Value></env:Subcode></env:Code><env:Reason><env:Text>Not supported</env:Text></env:Reason></env:Fault>");
}

}  // namespace vigil::test
