#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>
#include <openssl/pem.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/err.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/objects.h>
#include <openssl/cms.h>
#include <openssl/rand.h>
// Swift cannot expand C macros: static inline wrappers live here.
static inline void COpenSSL_free(void *p) { OPENSSL_free(p); }
static inline struct stack_st_X509 *COpenSSL_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int COpenSSL_sk_X509_push(struct stack_st_X509 *sk, X509 *x) { return sk_X509_push(sk, x); }
static inline void COpenSSL_sk_X509_free(struct stack_st_X509 *sk) { sk_X509_free(sk); }
static inline int COpenSSL_sk_X509_num(const struct stack_st_X509 *sk) { return sk_X509_num(sk); }
static inline X509 *COpenSSL_sk_X509_value(const struct stack_st_X509 *sk, int i) { return sk_X509_value(sk, i); }
// The test store's CA (TestCertificateAuthority.swift): EVP_EC_gen is a macro over a variadic
// function, BIO_get_mem_data and X509V3_set_ctx_nodb are macros.
static inline EVP_PKEY *COpenSSL_generate_P256(void) { return EVP_EC_gen("P-256"); }
static inline long COpenSSL_BIO_get_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }
static inline void COpenSSL_X509V3_set_ctx_nodb(X509V3_CTX *ctx) { X509V3_set_ctx_nodb(ctx); }
// App receipt contents (AppReceiptContents.swift): ASN1_SEQUENCE_ANY / ASN1_SET_ANY are stacks
// of ASN1_TYPE whose sk_ functions are macros, and ASN1_TYPE's value is a union.
static inline STACK_OF(ASN1_TYPE) *COpenSSL_sk_ASN1_TYPE_new_null(void) { return sk_ASN1_TYPE_new_null(); }
static inline int COpenSSL_sk_ASN1_TYPE_push(STACK_OF(ASN1_TYPE) *sk, ASN1_TYPE *t) { return sk_ASN1_TYPE_push(sk, t); }
static inline int COpenSSL_sk_ASN1_TYPE_num(const STACK_OF(ASN1_TYPE) *sk) { return sk_ASN1_TYPE_num(sk); }
static inline ASN1_TYPE *COpenSSL_sk_ASN1_TYPE_value(const STACK_OF(ASN1_TYPE) *sk, int i) { return sk_ASN1_TYPE_value(sk, i); }
static inline void COpenSSL_sk_ASN1_TYPE_pop_free(STACK_OF(ASN1_TYPE) *sk) { sk_ASN1_TYPE_pop_free(sk, ASN1_TYPE_free); }
static inline ASN1_STRING *COpenSSL_ASN1_TYPE_string(const ASN1_TYPE *t) { return t->value.asn1_string; }
#endif
