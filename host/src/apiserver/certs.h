// Certificates for the embedded API server's TLS mode: a self-signed CA and a server
// certificate for 127.0.0.1/localhost signed by it, generated in memory with OpenSSL; and the
// server's one source of random identifiers.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace kuscia_host::apiserver {

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

// `chars` lowercase hex digits from OpenSSL's CSPRNG: tokens, CA names, object uids.
std::string randomHex(std::size_t chars);

} // namespace kuscia_host::apiserver
