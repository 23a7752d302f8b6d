// The certificate library: what generate_serving_bundle and generate_localhost_pair produce,
// checked with OpenSSL directly, and the inspection and file-writing helpers.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <set>

#include "certs/certs.h"
#include "certs/certs_test_support.h"

using namespace certs_test;
namespace certs = gpu_admission::certs;

namespace {

constexpr std::time_t kNow = 1'800'000'000;  // 2027-01-15, a fixed issue time

certs::ServingBundle make_bundle(const std::string& service = "gpu-admission",
                                 const std::string& ns = "gpu-system", int days = 365,
                                 std::time_t now = kNow) {
  certs::ServingBundle bundle = certs::generate_serving_bundle({service, ns, days, now});
  REQUIRE(bundle.error == "");
  return bundle;
}

}  // namespace

TEST_CASE("the serving certificate chains to the CA and to nothing else", "[certs]") {
  certs::ServingBundle bundle = make_bundle();
  X509Ptr ca = parse_cert(bundle.ca_cert_pem);
  X509Ptr leaf = parse_cert(bundle.cert_pem);
  REQUIRE(ca);
  REQUIRE(leaf);
  const std::time_t at = kNow + 60;

  for (const std::string& host : bundle.dns_names) CHECK(verify(ca, leaf, host, false, at) == X509_V_OK);
  CHECK(verify(ca, leaf, "other.gpu-system.svc", false, at) == X509_V_ERR_HOSTNAME_MISMATCH);
  // The CA signs only: it is no server certificate itself.
  CHECK(verify(ca, ca, "gpu-admission.gpu-system.svc", false, at) != X509_V_OK);

  // Another run's CA does not vouch for this certificate.
  certs::ServingBundle other = make_bundle();
  CHECK(verify(parse_cert(other.ca_cert_pem), leaf, "gpu-admission.gpu-system.svc", false, at) ==
        X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
  CHECK(other.ca_cert_pem != bundle.ca_cert_pem);
  CHECK(other.key_pem != bundle.key_pem);

  // A TLS client trusting only the CA accepts the server under its Service name (certificates
  // issued now, as the handshake checks against the clock).
  certs::ServingBundle live = certs::generate_serving_bundle({"gpu-admission", "gpu-system", 1, 0});
  REQUIRE(live.ok());
  for (const std::string& host : live.dns_names)
    CHECK(tls_handshake(live.cert_pem, live.key_pem, live.ca_cert_pem, host) == "");
  CHECK(tls_handshake(live.cert_pem, live.key_pem, live.ca_cert_pem, "gpu-admission.other.svc") != "");
  CHECK(tls_handshake(live.cert_pem, live.key_pem, other.ca_cert_pem, "gpu-admission.gpu-system.svc") != "");
}

TEST_CASE("the serving certificate names exactly the four service DNS names", "[certs]") {
  certs::ServingBundle bundle = make_bundle("webhook", "team-a");
  X509Ptr leaf = parse_cert(bundle.cert_pem);
  CHECK(sans(leaf) == std::vector<std::string>{"DNS:webhook", "DNS:webhook.team-a", "DNS:webhook.team-a.svc",
                                               "DNS:webhook.team-a.svc.cluster.local"});
  CHECK(bundle.dns_names == std::vector<std::string>{"webhook", "webhook.team-a", "webhook.team-a.svc",
                                                     "webhook.team-a.svc.cluster.local"});
  CHECK(certs::service_dns_names("webhook", "team-a") == bundle.dns_names);
  CHECK(common_name(leaf) == "webhook.team-a.svc");
  CHECK(ext_critical(leaf, NID_subject_alt_name) == false);
}

TEST_CASE("long service and namespace names keep all SANs, the CN falls back to NAME", "[certs]") {
  std::string service = "s" + std::string(62, 'x');  // 63 characters each
  std::string ns = std::string(62, 'n') + "1";
  certs::ServingBundle bundle = make_bundle(service, ns);
  X509Ptr leaf = parse_cert(bundle.cert_pem);
  CHECK(common_name(leaf) == service);  // NAME.NS.svc is over the 64-byte CN limit
  REQUIRE(sans(leaf).size() == 4);
  CHECK(sans(leaf)[3] == "DNS:" + service + "." + ns + ".svc.cluster.local");
  CHECK(verify(parse_cert(bundle.ca_cert_pem), leaf, service + "." + ns + ".svc", false, kNow) == X509_V_OK);
}

TEST_CASE("both keys are ECDSA P-256 and both signatures ECDSA with SHA-256", "[certs]") {
  certs::ServingBundle bundle = make_bundle();
  for (const std::string* pem : {&bundle.ca_cert_pem, &bundle.cert_pem}) {
    X509Ptr cert = parse_cert(*pem);
    EVP_PKEY* pub = X509_get0_pubkey(cert.get());
    REQUIRE(pub != nullptr);
    CHECK(EVP_PKEY_get_base_id(pub) == EVP_PKEY_EC);
    CHECK(group_name(pub) == "prime256v1");
    CHECK(EVP_PKEY_get_bits(pub) == 256);
    CHECK(X509_get_signature_nid(cert.get()) == NID_ecdsa_with_SHA256);
    CHECK(X509_get_version(cert.get()) == X509_VERSION_3);
  }
  // The key is unencrypted PKCS#8 and belongs to the serving certificate.
  CHECK(bundle.key_pem.starts_with("-----BEGIN PRIVATE KEY-----\n"));
  PKeyPtr key = parse_key(bundle.key_pem);
  REQUIRE(key);
  CHECK(EVP_PKEY_get_base_id(key.get()) == EVP_PKEY_EC);
  CHECK(group_name(key.get()) == "prime256v1");
  CHECK(X509_check_private_key(parse_cert(bundle.cert_pem).get(), key.get()) == 1);
  CHECK(X509_check_private_key(parse_cert(bundle.ca_cert_pem).get(), key.get()) != 1);
  ERR_clear_error();
}

TEST_CASE("the serving certificate is for server auth and digital signatures only", "[certs]") {
  certs::ServingBundle bundle = make_bundle();
  X509Ptr leaf = parse_cert(bundle.cert_pem);
  X509Ptr ca = parse_cert(bundle.ca_cert_pem);
  CHECK(X509_get_extended_key_usage(leaf.get()) == XKU_SSL_SERVER);
  CHECK(X509_get_key_usage(leaf.get()) == KU_DIGITAL_SIGNATURE);
  CHECK(ext_critical(leaf, NID_key_usage));
  CHECK(X509_check_ca(leaf.get()) == 0);
  CHECK(has_ext(leaf, NID_basic_constraints));
  CHECK(X509_check_purpose(leaf.get(), X509_PURPOSE_SSL_SERVER, 0) == 1);
  CHECK(X509_check_purpose(leaf.get(), X509_PURPOSE_SSL_CLIENT, 0) != 1);

  // authorityKeyIdentifier points at the CA's subjectKeyIdentifier.
  const ASN1_OCTET_STRING* akid = X509_get0_authority_key_id(leaf.get());
  const ASN1_OCTET_STRING* skid = X509_get0_subject_key_id(ca.get());
  REQUIRE(akid != nullptr);
  REQUIRE(skid != nullptr);
  CHECK(ASN1_OCTET_STRING_cmp(akid, skid) == 0);
  CHECK(X509_get0_subject_key_id(leaf.get()) != nullptr);
  CHECK(X509_NAME_cmp(X509_get_issuer_name(leaf.get()), X509_get_subject_name(ca.get())) == 0);
}

TEST_CASE("the CA is a critical CA:TRUE that may sign certificates and CRLs", "[certs]") {
  certs::ServingBundle bundle = make_bundle();
  X509Ptr ca = parse_cert(bundle.ca_cert_pem);
  CHECK(X509_check_ca(ca.get()) == 1);
  CHECK(ext_critical(ca, NID_basic_constraints));
  CHECK(ext_critical(ca, NID_key_usage));
  CHECK(X509_get_key_usage(ca.get()) == (KU_KEY_CERT_SIGN | KU_CRL_SIGN));
  CHECK(X509_get0_subject_key_id(ca.get()) != nullptr);
  CHECK((X509_get_extension_flags(ca.get()) & EXFLAG_SS) != 0);  // self-signed
  CHECK(X509_NAME_cmp(X509_get_issuer_name(ca.get()), X509_get_subject_name(ca.get())) == 0);
  CHECK(common_name(ca).starts_with("gpu-admission-ca"));
}

TEST_CASE("validity runs from five minutes before issue for the requested days", "[certs]") {
  for (int days : {1, 30, 365, 3650}) {
    certs::ServingBundle bundle = make_bundle("gpu-admission", "gpu-system", days);
    CHECK(bundle.not_after == kNow + days * 86400LL);
    for (const std::string* pem : {&bundle.ca_cert_pem, &bundle.cert_pem}) {
      X509Ptr cert = parse_cert(*pem);
      CHECK(to_unix(X509_get0_notBefore(cert.get())) == kNow - 300);
      CHECK(to_unix(X509_get0_notAfter(cert.get())) == kNow + days * 86400LL);
    }
    X509Ptr ca = parse_cert(bundle.ca_cert_pem);
    X509Ptr leaf = parse_cert(bundle.cert_pem);
    const std::string host = "gpu-admission.gpu-system.svc";
    CHECK(verify(ca, leaf, host, false, kNow - 299) == X509_V_OK);
    CHECK(verify(ca, leaf, host, false, kNow - 301) == X509_V_ERR_CERT_NOT_YET_VALID);
    CHECK(verify(ca, leaf, host, false, kNow + days * 86400LL - 1) == X509_V_OK);
    CHECK(verify(ca, leaf, host, false, kNow + days * 86400LL + 1) == X509_V_ERR_CERT_HAS_EXPIRED);
  }
}

TEST_CASE("without a fixed time the certificates are issued now", "[certs]") {
  std::time_t before = std::time(nullptr);
  certs::ServingBundle bundle = certs::generate_serving_bundle({"gpu-admission", "gpu-system", 10, 0});
  REQUIRE(bundle.ok());
  std::time_t after = std::time(nullptr);
  X509Ptr leaf = parse_cert(bundle.cert_pem);
  std::int64_t not_before = to_unix(X509_get0_notBefore(leaf.get()));
  CHECK(not_before >= before - 300);
  CHECK(not_before <= after - 300);
  CHECK(bundle.not_after >= before + 10 * 86400LL);
  CHECK(verify(parse_cert(bundle.ca_cert_pem), leaf, "gpu-admission") == X509_V_OK);
}

TEST_CASE("serial numbers are random, positive and 128 bits at most", "[certs]") {
  std::set<std::string> seen;
  for (int i = 0; i < 4; ++i) {
    certs::ServingBundle bundle = make_bundle();
    for (const std::string* pem : {&bundle.ca_cert_pem, &bundle.cert_pem}) {
      X509Ptr cert = parse_cert(*pem);
      BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert.get()), nullptr);
      REQUIRE(bn != nullptr);
      CHECK(BN_is_negative(bn) == 0);
      CHECK(BN_num_bits(bn) <= 128);
      CHECK(BN_num_bits(bn) > 64);  // fails with probability 2^-64
      char* hex = BN_bn2hex(bn);
      seen.insert(hex);
      OPENSSL_free(hex);
      BN_free(bn);
    }
  }
  CHECK(seen.size() == 8);
}

TEST_CASE("invalid input is reported, not generated", "[certs]") {
  CHECK(certs::generate_serving_bundle({"Bad_Name", "ns", 365, 0}).error != "");
  CHECK(certs::generate_serving_bundle({"1svc", "ns", 365, 0}).error != "");  // Service names start with a letter
  CHECK(certs::generate_serving_bundle({"svc", "", 365, 0}).error != "");
  CHECK(certs::generate_serving_bundle({"svc", "ns.x", 365, 0}).error != "");
  CHECK(certs::generate_serving_bundle({"svc", "ns", 0, 0}).error != "");
  CHECK(certs::generate_serving_bundle({"svc", "ns", 3651, 0}).error != "");
  certs::ServingBundle bad = certs::generate_serving_bundle({"svc", "ns", -1, 0});
  CHECK_FALSE(bad.ok());
  CHECK(bad.cert_pem.empty());
  CHECK(bad.key_pem.empty());
  CHECK(certs::generate_localhost_pair(0).error != "");
}

TEST_CASE("DNS label checks", "[certs]") {
  CHECK(certs::is_dns1123_label("a"));
  CHECK(certs::is_dns1123_label("kube-system"));
  CHECK(certs::is_dns1123_label("0abc"));
  CHECK(certs::is_dns1123_label(std::string(63, 'a')));
  CHECK_FALSE(certs::is_dns1123_label(std::string(64, 'a')));
  CHECK_FALSE(certs::is_dns1123_label(""));
  CHECK_FALSE(certs::is_dns1123_label("-abc"));
  CHECK_FALSE(certs::is_dns1123_label("abc-"));
  CHECK_FALSE(certs::is_dns1123_label("Abc"));
  CHECK_FALSE(certs::is_dns1123_label("a.b"));
  CHECK_FALSE(certs::is_dns1123_label("a_b"));
  CHECK(certs::is_dns1035_label("gpu-admission"));
  CHECK_FALSE(certs::is_dns1035_label("0abc"));
}

TEST_CASE("the localhost certificate is self-signed for localhost, 127.0.0.1 and ::1", "[certs]") {
  certs::KeyPair pair = certs::generate_localhost_pair(365, kNow);
  REQUIRE(pair.error == "");
  X509Ptr cert = parse_cert(pair.cert_pem);
  REQUIRE(cert);
  CHECK(sans(cert) == std::vector<std::string>{"DNS:localhost", "IP:127.0.0.1", "IP:::1"});
  CHECK(common_name(cert) == "localhost");
  CHECK(X509_check_ca(cert.get()) == 0);
  CHECK(X509_get_extended_key_usage(cert.get()) == XKU_SSL_SERVER);
  CHECK(X509_get_key_usage(cert.get()) == KU_DIGITAL_SIGNATURE);
  CHECK(X509_get_signature_nid(cert.get()) == NID_ecdsa_with_SHA256);
  EVP_PKEY* pub = X509_get0_pubkey(cert.get());
  CHECK(EVP_PKEY_get_base_id(pub) == EVP_PKEY_EC);
  CHECK(group_name(pub) == "prime256v1");
  CHECK(pair.key_pem.starts_with("-----BEGIN PRIVATE KEY-----\n"));
  CHECK(certs::check_key_matches(pair.cert_pem, pair.key_pem) == "");
  CHECK(pair.not_after == kNow + 365 * 86400LL);
  CHECK(to_unix(X509_get0_notAfter(cert.get())) == pair.not_after);

  // A client given the certificate itself as trust anchor (curl --cacert) accepts it.
  CHECK(verify(cert, cert, "localhost", false, kNow) == X509_V_OK);
  CHECK(verify(cert, cert, "127.0.0.1", true, kNow) == X509_V_OK);
  CHECK(verify(cert, cert, "::1", true, kNow) == X509_V_OK);
  CHECK(verify(cert, cert, "example.com", false, kNow) == X509_V_ERR_HOSTNAME_MISMATCH);

  certs::KeyPair now_pair = certs::generate_localhost_pair();
  REQUIRE(now_pair.ok());
  CHECK(tls_handshake(now_pair.cert_pem, now_pair.key_pem, now_pair.cert_pem, "localhost") == "");
  CHECK(tls_handshake(now_pair.cert_pem, now_pair.key_pem, now_pair.cert_pem, "127.0.0.1", true) == "");
  CHECK(now_pair.cert_pem != pair.cert_pem);
}

TEST_CASE("certificate_not_after reads the first certificate's expiry", "[certs]") {
  certs::ServingBundle bundle = make_bundle("gpu-admission", "gpu-system", 90);
  certs::Expiry expiry = certs::certificate_not_after(bundle.cert_pem);
  REQUIRE(expiry.ok());
  CHECK(expiry.not_after == kNow + 90 * 86400LL);
  // A chain: the first certificate counts.
  CHECK(certs::certificate_not_after(bundle.cert_pem + bundle.ca_cert_pem).not_after == kNow + 90 * 86400LL);

  CHECK_FALSE(certs::certificate_not_after("").ok());
  CHECK_FALSE(certs::certificate_not_after("not a certificate").ok());
  CHECK_FALSE(certs::certificate_not_after(bundle.key_pem).ok());
  std::string broken = bundle.cert_pem;
  broken[broken.size() / 2] = '!';
  CHECK_FALSE(certs::certificate_not_after(broken).ok());
}

TEST_CASE("check_key_matches tells matching and foreign keys apart", "[certs]") {
  certs::ServingBundle a = make_bundle();
  certs::ServingBundle b = make_bundle();
  CHECK(certs::check_key_matches(a.cert_pem, a.key_pem) == "");
  CHECK(certs::check_key_matches(a.cert_pem, b.key_pem) == "the private key does not belong to the certificate");
  CHECK(certs::check_key_matches(a.ca_cert_pem, a.key_pem) != "");
  CHECK(certs::check_key_matches("garbage", a.key_pem).starts_with("certificate: "));
  CHECK(certs::check_key_matches(a.cert_pem, "garbage").starts_with("private key: "));
  CHECK(certs::check_key_matches(a.cert_pem, a.cert_pem).starts_with("private key: "));

  // An encrypted key is refused without prompting for a passphrase.
  PKeyPtr key = parse_key(a.key_pem);
  BioPtr bio(BIO_new(BIO_s_mem()));
  const char pass[] = "secret";
  REQUIRE(PEM_write_bio_PKCS8PrivateKey(bio.get(), key.get(), EVP_aes_256_cbc(), pass, sizeof pass - 1,
                                        nullptr, nullptr) == 1);
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  std::string encrypted(data, static_cast<std::size_t>(len));
  CHECK(certs::check_key_matches(a.cert_pem, encrypted) == "private key: encrypted private keys are not supported");
}

TEST_CASE("read_file names the file it could not read", "[certs]") {
  TempDir dir;
  REQUIRE(dir.path() != "");
  spit(dir.file("x.pem"), "hello");
  certs::FileContents ok = certs::read_file(dir.file("x.pem"));
  CHECK(ok.error == "");
  CHECK(ok.data == "hello");

  certs::FileContents missing = certs::read_file(dir.file("missing.pem"));
  CHECK(missing.error == "cannot read " + dir.file("missing.pem") + ": No such file or directory");
  CHECK(certs::read_file(dir.path()).error == "cannot read " + dir.path() + ": is a directory");
  CHECK(certs::read_file(dir.file("x.pem"), 4).error.find("larger than 4 bytes") != std::string::npos);
  CHECK(certs::read_file(dir.file("x.pem"), 5).ok());
}

TEST_CASE("load_key_pair checks a certificate file against a key file", "[certs]") {
  TempDir dir;
  certs::ServingBundle a = make_bundle("gpu-admission", "gpu-system", 30);
  certs::ServingBundle b = make_bundle();
  spit(dir.file("a.crt"), a.cert_pem + a.ca_cert_pem);
  spit(dir.file("a.key"), a.key_pem);
  spit(dir.file("b.key"), b.key_pem);
  spit(dir.file("junk"), "junk");

  certs::KeyPair pair = certs::load_key_pair(dir.file("a.crt"), dir.file("a.key"));
  CHECK(pair.error == "");
  CHECK(pair.not_after == kNow + 30 * 86400LL);
  CHECK(pair.cert_pem == a.cert_pem + a.ca_cert_pem);
  CHECK(pair.key_pem == a.key_pem);

  certs::KeyPair mismatch = certs::load_key_pair(dir.file("a.crt"), dir.file("b.key"));
  CHECK(mismatch.error == dir.file("b.key") + " and " + dir.file("a.crt") +
                              ": the private key does not belong to the certificate");
  CHECK(mismatch.cert_pem.empty());
  CHECK(certs::load_key_pair(dir.file("junk"), dir.file("a.key")).error.starts_with(dir.file("junk") + ": "));
  CHECK(certs::load_key_pair(dir.file("a.crt"), dir.file("junk")).error.starts_with(dir.file("junk") + ": "));
  CHECK(certs::load_key_pair(dir.file("nope"), dir.file("a.key")).error.starts_with("cannot read " + dir.file("nope")));
  CHECK(certs::load_key_pair(dir.file("a.crt"), dir.file("nope")).error.starts_with("cannot read " + dir.file("nope")));
}

TEST_CASE("write_serving_files writes three files, the key 0600, and creates the directory", "[certs]") {
  TempDir tmp;
  std::string dir = tmp.file("nested/out");
  certs::ServingBundle bundle = make_bundle();
  mode_t old_umask = ::umask(0);  // so the modes seen are the ones the files were created with
  certs::WriteResult result = certs::write_serving_files(dir, bundle, false);
  ::umask(old_umask);
  REQUIRE(result.error == "");
  CHECK(result.written == std::vector<std::string>{dir + "/ca.crt", dir + "/tls.crt", dir + "/tls.key"});
  CHECK(slurp(dir + "/ca.crt") == bundle.ca_cert_pem);
  CHECK(slurp(dir + "/tls.crt") == bundle.cert_pem);
  CHECK(slurp(dir + "/tls.key") == bundle.key_pem);
  CHECK(file_mode(dir + "/tls.key") == 0600);
  CHECK(file_mode(dir + "/tls.crt") == 0644);
  CHECK(file_mode(dir + "/ca.crt") == 0644);
  // No temporary files are left behind.
  std::size_t entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    (void)entry;
    ++entries;
  }
  CHECK(entries == 3);
}

TEST_CASE("write_serving_files refuses to overwrite unless forced", "[certs]") {
  TempDir tmp;
  certs::ServingBundle first = make_bundle();
  certs::ServingBundle second = make_bundle();
  REQUIRE(certs::write_serving_files(tmp.path(), first, false).ok());

  certs::WriteResult refused = certs::write_serving_files(tmp.path(), second, false);
  CHECK_FALSE(refused.ok());
  CHECK(refused.usage_error);
  CHECK(refused.error.find(tmp.file("ca.crt")) != std::string::npos);
  CHECK(refused.error.find(tmp.file("tls.key")) != std::string::npos);
  CHECK(refused.error.find("--force") != std::string::npos);
  CHECK(slurp(tmp.file("tls.crt")) == first.cert_pem);
  CHECK(slurp(tmp.file("tls.key")) == first.key_pem);

  certs::WriteResult forced = certs::write_serving_files(tmp.path(), second, true);
  CHECK(forced.error == "");
  CHECK(slurp(tmp.file("ca.crt")) == second.ca_cert_pem);
  CHECK(slurp(tmp.file("tls.crt")) == second.cert_pem);
  CHECK(slurp(tmp.file("tls.key")) == second.key_pem);
  CHECK(file_mode(tmp.file("tls.key")) == 0600);
  CHECK(certs::check_key_matches(slurp(tmp.file("tls.crt")), slurp(tmp.file("tls.key"))) == "");
}

TEST_CASE("one existing target stops all three from being written", "[certs]") {
  TempDir tmp;
  spit(tmp.file("tls.key"), "old key");
  certs::WriteResult refused = certs::write_serving_files(tmp.path(), make_bundle(), false);
  CHECK(refused.usage_error);
  CHECK(refused.error == "refusing to overwrite " + tmp.file("tls.key") + " (use --force to replace)");
  CHECK_FALSE(exists(tmp.file("ca.crt")));
  CHECK_FALSE(exists(tmp.file("tls.crt")));
  CHECK(slurp(tmp.file("tls.key")) == "old key");

  // A forced write replaces a symlink itself rather than writing through it.
  TempDir other;
  spit(other.file("victim"), "keep me");
  std::filesystem::remove(tmp.file("tls.key"));
  std::filesystem::create_symlink(other.file("victim"), tmp.file("tls.key"));
  REQUIRE(certs::write_serving_files(tmp.path(), make_bundle(), true).ok());
  CHECK(slurp(other.file("victim")) == "keep me");
  CHECK_FALSE(std::filesystem::is_symlink(tmp.file("tls.key")));
  CHECK(file_mode(tmp.file("tls.key")) == 0600);
}

TEST_CASE("write_serving_files reports unusable directories", "[certs]") {
  TempDir tmp;
  spit(tmp.file("file"), "x");
  certs::WriteResult not_dir = certs::write_serving_files(tmp.file("file"), make_bundle(), false);
  CHECK_FALSE(not_dir.ok());
  CHECK(not_dir.usage_error);
  CHECK(not_dir.error.find(tmp.file("file")) != std::string::npos);

  std::filesystem::create_directory(tmp.file("tls.crt"));
  certs::WriteResult dir_target = certs::write_serving_files(tmp.path(), make_bundle(), true);
  CHECK(dir_target.error == tmp.file("tls.crt") + " is a directory");
  CHECK_FALSE(exists(tmp.file("ca.crt")));

  certs::ServingBundle empty;
  CHECK_FALSE(certs::write_serving_files(tmp.file("x"), empty, false).ok());
  CHECK_FALSE(exists(tmp.file("x/ca.crt")));
}

TEST_CASE("format_utc writes RFC 3339 UTC", "[certs]") {
  CHECK(certs::format_utc(0) == "1970-01-01T00:00:00Z");
  CHECK(certs::format_utc(kNow) == "2027-01-15T08:00:00Z");
}
