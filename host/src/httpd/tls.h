// TLS for the host's HTTP servers: certificates generated in memory with OpenSSL (a self-signed
// CA and a leaf signed by it: the embedded API server's TLS mode, the admin server's selfSigned),
// the server-side TLS context both servers use, and the host's one source of random identifiers.
#pragma once

#include <boost/asio/ssl/context.hpp>

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace kuscia_host::httpd {

struct CertificateSet {
  std::string caCertPem;
  std::string caKeyPem;
  std::string certPem; // leaf, signed by the CA
  std::string keyPem;
};

// A CA plus a leaf certificate. `serverAuth`: a server certificate for `hosts` (IP addresses or
// DNS names in the SAN); otherwise a client certificate with common name `commonName`.
Result<CertificateSet> generateCertificates(const std::string& commonName,
                                            const std::vector<std::string>& hosts,
                                            bool serverAuth = true);

// A TLS server context (TLS 1.2+, ALPN http/1.1) presenting `certPem` (a chain) with `keyPem`;
// with `clientCaPem`, client certificates signed by it are asked for and verified (optional: a
// client without one is served, and the request says whether it had one).
Result<std::shared_ptr<boost::asio::ssl::context>>
serverTlsContext(const std::string& certPem, const std::string& keyPem,
                 const std::string& clientCaPem = "");

// `chars` lowercase hex digits from OpenSSL's CSPRNG: tokens, CA names, object uids.
std::string randomHex(std::size_t chars);

} // namespace kuscia_host::httpd
