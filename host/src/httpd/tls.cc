#include "httpd/tls.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <stdexcept>

namespace kuscia_host::httpd {
namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Free>;
using Cert = std::unique_ptr<X509, Free>;

Key newKey() {
  return Key(EVP_EC_gen("P-256"));
}

bool addExt(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, Free> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

Cert newCert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuerKey,
             const std::vector<std::pair<int, std::string>>& exts) {
  Cert cert(X509_new());
  if (!cert) return nullptr;
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 365L * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
  for (const auto& [nid, value] : exts)
    if (!addExt(cert.get(), issuer != nullptr ? issuer : cert.get(), nid, value)) return nullptr;
  if (X509_sign(cert.get(), issuerKey != nullptr ? issuerKey : key, EVP_sha256()) == 0)
    return nullptr;
  return cert;
}

std::string pem(X509* cert) {
  std::unique_ptr<BIO, Free> bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

std::string pem(EVP_PKEY* key) {
  std::unique_ptr<BIO, Free> bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

} // namespace

std::string randomHex(std::size_t chars) {
  static const char* hex = "0123456789abcdef";
  std::vector<unsigned char> bytes((chars + 1) / 2);
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1)
    throw std::runtime_error("OpenSSL's random generator failed");
  std::string s;
  s.reserve(chars);
  for (unsigned char b : bytes) {
    s += hex[b >> 4];
    s += hex[b & 15];
  }
  s.resize(chars);
  return s;
}

Result<CertificateSet> generateCertificates(const std::string& commonName,
                                            const std::vector<std::string>& hosts,
                                            bool serverAuth) {
  Key caKey = newKey();
  Key leafKey = newKey();
  if (!caKey || !leafKey) return makeError("cannot generate a key pair (OpenSSL EC P-256)");
  // A unique CA name: verifiers look issuers up by name, and two servers' CAs must not collide.
  std::string caName = "kuscia-host-ca-" + randomHex(12);
  Cert ca = newCert(caKey.get(), caName, nullptr, nullptr,
                    {{NID_basic_constraints, "critical,CA:TRUE"},
                     {NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"},
                     {NID_subject_key_identifier, "hash"}});
  if (!ca) return makeError("cannot create the CA certificate");
  std::vector<std::pair<int, std::string>> exts = {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature,keyEncipherment"}};
  if (serverAuth) {
    std::string san;
    for (const auto& h : hosts) {
      bool ip = !h.empty() && (std::isdigit(static_cast<unsigned char>(h[0])) ||
                               h.find(':') != std::string::npos);
      san += (san.empty() ? "" : ",") + std::string(ip ? "IP:" : "DNS:") + h;
    }
    exts.emplace_back(NID_ext_key_usage, "serverAuth");
    if (!san.empty()) exts.emplace_back(NID_subject_alt_name, san);
  } else {
    exts.emplace_back(NID_ext_key_usage, "clientAuth");
  }
  Cert leaf = newCert(leafKey.get(), commonName, ca.get(), caKey.get(), exts);
  if (!leaf) return makeError("cannot create the leaf certificate");
  return CertificateSet{pem(ca.get()), pem(caKey.get()), pem(leaf.get()), pem(leafKey.get())};
}

Result<std::shared_ptr<boost::asio::ssl::context>>
serverTlsContext(const std::string& certPem, const std::string& keyPem,
                 const std::string& clientCaPem) {
  namespace ssl = boost::asio::ssl;
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  ctx->use_certificate_chain(boost::asio::buffer(certPem), ec);
  if (ec) return makeError("the certificate is unusable: " + ec.message());
  ctx->use_private_key(boost::asio::buffer(keyPem), ssl::context::pem, ec);
  if (ec) return makeError("the private key is unusable: " + ec.message());
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1)
    return makeError("the private key does not match the certificate");
  if (!clientCaPem.empty()) {
    ctx->add_certificate_authority(boost::asio::buffer(clientCaPem), ec);
    if (ec) return makeError("the client CA is unusable: " + ec.message());
    ctx->set_verify_mode(ssl::verify_peer); // optional: a client without one is served
  }
  // ALPN: offer http/1.1 only (clients asking for h2 fall back).
  SSL_CTX_set_alpn_select_cb(
      ctx->native_handle(),
      [](SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
         unsigned int inlen, void*) -> int {
        static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
        unsigned char* sel = nullptr;
        if (SSL_select_next_proto(&sel, outlen, kHttp11, sizeof kHttp11, in, inlen) ==
            OPENSSL_NPN_NEGOTIATED) {
          *out = sel;
          return SSL_TLSEXT_ERR_OK;
        }
        return SSL_TLSEXT_ERR_NOACK;
      },
      nullptr);
  return ctx;
}

} // namespace kuscia_host::httpd
