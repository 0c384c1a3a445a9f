/*
 * test/node/images/pause.c: the sandbox ("pause") image's only program, built static by
 * test/node/images.ts. Holds a pod's namespaces: waits until SIGTERM or SIGINT, reaping any
 * child re-parented to it. Owns nothing else.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, 0, WNOHANG) > 0) {} }

int main(void) {
  struct sigaction q = {0}, r = {0};
  q.sa_handler = quit;
  r.sa_handler = reap;
  r.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  sigaction(SIGTERM, &q, 0);
  sigaction(SIGINT, &q, 0);
  sigaction(SIGCHLD, &r, 0);
  for (;;) pause();
}
