#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <stddef.h>
#include <stdarg.h>
#include <string.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* The HTTP target keeps the raw request target (from the URI log callback) and decodes path
   segments and query values itself, so MHD's in-place unescaping would only cost time and,
   for the path, destroy "%2F" inside a segment. */
static inline size_t CMHD_no_unescape(void *cls, struct MHD_Connection *connection, char *s) {
    (void)cls; (void)connection;
    return strlen(s);
}

/* MHD_start_daemon is C-variadic; Swift cannot call it. Fixed-arity wrapper over the options
   the HTTP target uses. `listen_fd` is a socket the caller bound and put into listen mode. */
static inline struct MHD_Daemon *CMHD_start_daemon(
    unsigned int flags,
    int listen_fd,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls,
    void *(*uri_log)(void *cls, const char *uri, struct MHD_Connection *con), void *uri_log_cls,
    MHD_NotifyConnectionCallback notify_connection, void *notify_connection_cls,
    unsigned int thread_pool_size,
    unsigned int connection_limit,
    unsigned int connection_timeout_seconds,
    size_t connection_memory_limit)
{
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
        MHD_OPTION_URI_LOG_CALLBACK, uri_log, uri_log_cls,
        MHD_OPTION_NOTIFY_CONNECTION, notify_connection, notify_connection_cls,
        MHD_OPTION_UNESCAPE_CALLBACK, CMHD_no_unescape, (void *)NULL,
        MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
        MHD_OPTION_END);
}

/* MHD_get_daemon_info is variadic too. Returns the bound port, or 0. */
static inline uint16_t CMHD_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/* The connection's socket, or -1 (MHD_get_connection_info is variadic). */
static inline int CMHD_connection_fd(struct MHD_Connection *connection) {
    if (connection == NULL) return -1;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int)info->connect_fd;
}

/* Number of open connections, or 0 when unknown. */
static inline unsigned int CMHD_current_connections(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info == NULL ? 0 : info->num_connections;
}

#endif
