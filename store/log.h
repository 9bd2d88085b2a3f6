/*
 * log: the one logging module. Messages go to stderr (the daemon runs in the
 * foreground) with a UTC timestamp and level. warn() appends strerror(errno),
 * warnx() does not, fatal() exits 1, debug() prints only when verbose.
 */
#ifndef PROFILEFS_LOG_H
#define PROFILEFS_LOG_H

extern int log_verbose;

void	log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_fatalx(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

#endif
