/*
 * The daemon's stop, watched. A stop signal starts the watch; then:
 * - the filesystem's loop that has not ended within STOPWATCH_KICK_NS is
 *   sent the signal again (its wait can miss one that came just before it);
 * - a stop still going after STOPWATCH_WARN_NS logs the step it is in and
 *   what each thread waits on;
 * - one still going after STOPWATCH_DEADLINE_NS ends the process: every
 *   acknowledged profile is in the store's write-ahead log, and an init
 *   system would kill it later anyway, without saying why.
 */
#ifndef PROFILEFS_STOPWATCH_H
#define PROFILEFS_STOPWATCH_H

#include <pthread.h>

#define STOPWATCH_KICK_NS	(2LL * 1000000000)
#define STOPWATCH_WARN_NS	(8LL * 1000000000)
#define STOPWATCH_DEADLINE_NS	(15LL * 1000000000)

/*
 * Start the watch's thread (stop signals blocked in the caller, so in it);
 * `serving` is the thread that runs the filesystem's loop. -errno.
 */
int	stopwatch_start(pthread_t serving);
/* A stop signal came: async-signal-safe. */
void	stopwatch_signal(int sig);
/* The step the stop is at, a static string; NULL while serving. */
void	stopwatch_step(const char *step);
/* The stop ended: the watch's thread goes. */
void	stopwatch_end(void);

#endif
