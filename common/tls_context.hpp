#pragma once
// TLS settings in one place for every listener and client of Vigil (vigild's wire and HTTPS
// listeners, the proxy's listener, and the wire, HTTP and proxy clients of vigild): TLS 1.2 and
// 1.3 only, forward-secret AEAD suites; a client verifies the server's certificate chain against
// a CA file (or the system's trust store) and that the certificate names the host connected to.
// Thread: any; a context is shared read-only by the streams made with it. Errors: start-up code,
// throws std::runtime_error naming the option and the file that cannot be used.
#include <boost/asio/ssl/context.hpp>
#include <filesystem>
#include <memory>
#include <string>

namespace vigil {

// A server context with CERT's chain (PEM) and KEY (PEM). FLAG names the options in errors:
// FLAG + "-cert", FLAG + "-key" (e.g. "--http-tls"). Throws when a file cannot be read or the key
// is not the certificate's.
std::shared_ptr<boost::asio::ssl::context> make_server_tls_context(const std::filesystem::path& cert,
                                                                   const std::filesystem::path& key,
                                                                   const std::string& flag);

// A client context trusting CA_FILE (PEM); empty: the file VIGIL_TLS_CA names (set by `vigil
// --tls-ca`), else the system's trust store.
std::shared_ptr<boost::asio::ssl::context> make_client_tls_context(const std::string& ca_file = {});

// Makes the handshake on SSL (an OpenSSL SSL*) verify the peer's certificate and that it names
// HOST (a DNS name or an IP address), and sends HOST as SNI when it is a name.
void verify_server_name(void* ssl, const std::string& host);

}  // namespace vigil
