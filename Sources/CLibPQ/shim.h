#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H
#include <libpq-fe.h>

/* Error-field codes are char-literal macros ('C', 'M', ...), which Swift does not import. */
static inline int CLibPQ_DiagSQLState(void) { return PG_DIAG_SQLSTATE; }
static inline int CLibPQ_DiagMessagePrimary(void) { return PG_DIAG_MESSAGE_PRIMARY; }
static inline int CLibPQ_DiagMessageDetail(void) { return PG_DIAG_MESSAGE_DETAIL; }
static inline int CLibPQ_DiagConstraintName(void) { return PG_DIAG_CONSTRAINT_NAME; }

#endif
