// The bounded XML reader and the SOAP messages of ONVIF discovery, without sockets: hostile XML
// (DTDs, entities, depth, size) refused; faults read as faults; the UsernameToken digest as ONVIF
// Core 5.12 defines it; the main stream and substream chosen by pixels.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "client/cli/discover_command.hpp"
#include "onvif/discovery.hpp"
#include "onvif/soap.hpp"
#include "onvif/xml_tree.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil::onvif;

TEST_CASE("the XML reader names elements by local name and keeps text and attributes", "[onvif]") {
  const auto doc =
      parse_xml("<a:Root xmlns:a=\"u\"><a:P token=\"t1\"><Name> one </Name></a:P><P token=\"t2\"/></a:Root>");
  CHECK(doc.name == "Root");
  const auto ps = doc.find_all("P");
  REQUIRE(ps.size() == 2);
  CHECK(ps[0]->attribute("token") == "t1");
  CHECK(ps[0]->text_of("Name") == "one");
  CHECK(ps[1]->attribute("token") == "t2");
  CHECK(doc.find("Missing") == nullptr);
}

TEST_CASE("the XML reader refuses DTDs, entities, depth and size past its bounds", "[onvif]") {
  const std::string laughs =
      "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;\">]>"
      "<lolz>&lol2;</lolz>";
  CHECK_THROWS_WITH(parse_xml(laughs), ContainsSubstring("DOCTYPE"));
  const std::string external =
      "<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><r>&x;</r>";
  CHECK_THROWS_AS(parse_xml(external), XmlError);
  CHECK_THROWS_AS(parse_xml("<r>&undefined;</r>"), XmlError);
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "<a>";
  for (int i = 0; i < 40; ++i) deep += "</a>";
  CHECK_THROWS_WITH(parse_xml(deep), ContainsSubstring("nested deeper"));
  CHECK_THROWS_WITH(parse_xml(std::string(XmlLimits{}.max_bytes + 1, ' ')), ContainsSubstring("limit"));
  std::string wide = "<r>";
  for (int i = 0; i < 20001; ++i) wide += "<e/>";
  wide += "</r>";
  CHECK_THROWS_WITH(parse_xml(wide), ContainsSubstring("elements"));
  CHECK_THROWS_AS(parse_xml(""), XmlError);
  CHECK_THROWS_AS(parse_xml("<a><b></a>"), XmlError);
  CHECK_THROWS_AS(parse_xml("<a/><b/>"), XmlError);
}

TEST_CASE("the PasswordDigest is base64(SHA-1(nonce + created + password))", "[onvif]") {
  // Computed independently of this code:
  // printf 'abcd2026-01-01T00:00:00Zsecret' | sha1sum | xxd -r -p | base64
  CHECK(password_digest("abcd", "2026-01-01T00:00:00Z", "secret") == "eVfn1ic/1+3iLeT0BaZU4ptzARI=");
  CHECK(base64_decode(base64_encode("\x01\x02\x03\x04\x05")) == "\x01\x02\x03\x04\x05");
  CHECK_THROWS_AS(base64_decode("abc"), OnvifError);
  const auto request = get_profiles_request({"admin", "pw"});
  const auto doc = parse_xml(request);
  CHECK(doc.text_of("Username") == "admin");
  const auto nonce = base64_decode(doc.text_of("Nonce"));
  CHECK(nonce.size() == 16);
  CHECK(password_digest(nonce, doc.text_of("Created"), "pw") == doc.text_of("Password"));
  CHECK(get_profiles_request({}).find("Security") == std::string::npos);
}

TEST_CASE("a SOAP fault is an error; NotAuthorized says to check the credentials", "[onvif]") {
  const std::string fault =
      "<s:Envelope xmlns:s=\"e\"><s:Body><s:Fault><s:Code><s:Value>s:Sender</s:Value><s:Subcode><s:Value>"
      "ter:NotAuthorized</s:Value></s:Subcode></s:Code><s:Reason><s:Text>Sender not authorized</s:Text></s:Reason>"
      "</s:Fault></s:Body></s:Envelope>";
  CHECK_THROWS_AS(parse_profiles(fault), NotAuthorized);
  CHECK_THROWS_WITH(parse_profiles(fault), ContainsSubstring("wrong user or password"));
  CHECK_THROWS_AS(parse_profiles("<s:Envelope><s:Body><x/></s:Body></s:Envelope>"), OnvifError);
  CHECK_THROWS_AS(parse_stream_uri("<s:Envelope><s:Body><GetStreamUriResponse/></s:Body></s:Envelope>"), OnvifError);
  CHECK_THROWS_AS(parse_media_url("<html>login</html>"), OnvifError);
}

TEST_CASE("more than 64 profiles is refused", "[onvif]") {
  std::string reply = "<Envelope><Body><GetProfilesResponse>";
  for (int i = 0; i < 65; ++i) reply += "<Profiles token=\"p" + std::to_string(i) + "\"/>";
  reply += "</GetProfilesResponse></Body></Envelope>";
  CHECK_THROWS_WITH(parse_profiles(reply), ContainsSubstring("more than 64"));
}

TEST_CASE("ProbeMatches give endpoint, addresses, name and hardware", "[onvif]") {
  const std::string matches =
      "<s:Envelope><s:Header><a:RelatesTo>urn:uuid:1</a:RelatesTo></s:Header><s:Body><d:ProbeMatches>"
      "<d:ProbeMatch><a:EndpointReference><a:Address>urn:uuid:cam</a:Address></a:EndpointReference>"
      "<d:Scopes> onvif://www.onvif.org/name/Back%20Yard onvif://www.onvif.org/hardware/X1 </d:Scopes>"
      "<d:XAddrs>http://10.0.0.7/onvif/device_service http://[fe80::1]/onvif/device_service</d:XAddrs>"
      "</d:ProbeMatch><d:ProbeMatch><d:XAddrs></d:XAddrs></d:ProbeMatch></d:ProbeMatches></s:Body></s:Envelope>";
  const auto found = parse_probe_matches(matches);
  REQUIRE(found.size() == 1);  // the second has no address to ask
  CHECK(found[0].endpoint == "urn:uuid:cam");
  CHECK(found[0].name == "Back Yard");
  CHECK(found[0].hardware == "X1");
  CHECK(found[0].relates_to == "urn:uuid:1");
  CHECK(found[0].xaddrs.size() == 2);
  CHECK(parse_xml(probe_message("urn:uuid:42")).text_of("Types") == "dn:NetworkVideoTransmitter");
}

TEST_CASE("main stream is the profile of most pixels, substream the one of fewest", "[onvif]") {
  Device d;
  d.profiles = {{"a", "mid", "H264", 1280, 720, 25, 2048, "rtsp://c/mid"},
                {"b", "low", "H264", 640, 360, 15, 512, "rtsp://c/low"},
                {"c", "high", "H265", 3840, 2160, 25, 8192, "rtsp://c/high"}};
  choose_streams(d);
  CHECK(d.main_uri == "rtsp://c/high");
  CHECK(d.substream_uri == "rtsp://c/low");
  d.profiles.resize(1);
  choose_streams(d);
  CHECK(d.main_uri == "rtsp://c/mid");
  CHECK(d.substream_uri.empty());
}

TEST_CASE("camera names from device names; credentials in and out of URLs", "[onvif]") {
  using vigil::client::camera_name_from;
  using vigil::client::with_credentials;
  CHECK(camera_name_from("Front Door") == "Front-Door");
  CHECK(camera_name_from("../etc/passwd") == "etc-passwd");
  CHECK(camera_name_from("") == "camera");
  CHECK(camera_name_from("***") == "camera");
  CHECK(camera_name_from(std::string(100, 'x')).size() == 64);
  CHECK(with_credentials("rtsp://10.0.0.7:554/main", "ad min", "p@ss:") ==
        "rtsp://ad%20min:p%40ss%3A@10.0.0.7:554/main");
  CHECK(with_credentials("rtsp://u:p@10.0.0.7/main", "x", "y") == "rtsp://u:p@10.0.0.7/main");
  CHECK(with_credentials("rtsp://10.0.0.7/main", "", "") == "rtsp://10.0.0.7/main");
  CHECK(without_credentials("rtsp://u:p@10.0.0.7/main") == "rtsp://10.0.0.7/main");
  CHECK(without_credentials("rtsp://10.0.0.7/a@b") == "rtsp://10.0.0.7/a@b");
}
