// SPDX-License-Identifier: GPL-2.0
// PID 1 of the device-tree test (scripts/arm64-dt-test.sh): runs the steps of /steps (one a
// line, a verb and its arguments), prints one "dt-test:" line per step and, after each step, the
// kernel's new log records as "dt-test: kmsg: ..." lines (the kernel runs with loglevel=1, so
// this program is the only writer of the console and no line is cut by another), then powers
// off. The host script decides what the lines must say. Verbs:
//   load PATH.ko      finit_module            -> "load NAME: ok" / "load NAME: failed: ERROR"
//   unload NAME       delete_module           -> "unload NAME: ok" / "... failed: ERROR"
//   cat PATH          a small file, lines joined with " / " -> "cat PATH: TEXT" / "cat PATH: missing"
//   exists PATH       -> "exists PATH: yes" / "exists PATH: no"
//   driver PATH       the driver a device is bound to (PATH/driver) -> "driver PATH: NAME" / "none"
//   write PATH VALUE  -> "write PATH VALUE: ok" / "... failed: ERROR"
//   count PATH TEXT   lines of PATH containing TEXT -> "count PATH TEXT: N"
//   run PROG ARGS...  its output on the console, then "run PROG ARGS...: exit N"
//   say TEXT          -> "say TEXT"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int kmsg = -1;

/* Prints the kernel log records that arrived since the last call. */
static void drain_kmsg(void)
{
	char rec[2048];

	if (kmsg < 0)
		return;
	for (;;) {
		ssize_t n = read(kmsg, rec, sizeof(rec) - 1);
		char *text, *end;

		if (n < 0 && errno == EPIPE)
			continue; /* records were overwritten: go on with the next one */
		if (n <= 0)
			return;
		rec[n] = 0;
		/* "prio,seq,usec,flags;text\n" then " KEY=value" lines. */
		text = strchr(rec, ';');
		text = text ? text + 1 : rec;
		end = strchr(text, '\n');
		if (end)
			*end = 0;
		printf("dt-test: kmsg: %s\n", text);
	}
}

static void cat(const char *path)
{
	char buf[1024];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	if (n < 0) {
		printf("dt-test: cat %s: missing (%s)\n", path, strerror(errno));
		return;
	}
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = 0;
	printf("dt-test: cat %s: ", path);
	for (char *p = buf; *p; p++) {
		if (*p == '\n')
			fputs(" / ", stdout);
		else
			putchar(*p);
	}
	putchar('\n');
}

static void count(const char *path, const char *text)
{
	char line[1024];
	FILE *f = fopen(path, "r");
	int n = 0;

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, text) != NULL;
	if (f)
		fclose(f);
	printf("dt-test: count %s %s: %d\n", path, text, f ? n : -1);
}

static void run(char **argv, const char *line)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execv(argv[0], argv);
		printf("dt-test: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		printf("dt-test: run %s: fork/wait failed: %s\n", line, strerror(errno));
		return;
	}
	printf("dt-test: run %s: exit %d\n", line, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

static void step(char *line)
{
	char copy[1024], *argv[32], *verb;
	int argc = 0;

	line[strcspn(line, "\n")] = 0;
	snprintf(copy, sizeof(copy), "%s", line);
	for (char *t = strtok(line, " "); t && argc < 31; t = strtok(NULL, " "))
		argv[argc++] = t;
	argv[argc] = NULL;
	if (!argc)
		return;
	verb = argv[0];
	/* The text after the verb, for the messages. */
	const char *rest = copy + strlen(verb) + (copy[strlen(verb)] ? 1 : 0);

	if (!strcmp(verb, "load") && argc == 2) {
		char name[64], *dot;
		int fd = open(argv[1], O_RDONLY | O_CLOEXEC);

		snprintf(name, sizeof(name), "%s", basename(argv[1]));
		dot = strstr(name, ".ko");
		if (dot)
			*dot = 0;
		if (fd < 0 || syscall(SYS_finit_module, fd, "", 0) != 0)
			printf("dt-test: load %s: failed: %s\n", name, strerror(errno));
		else
			printf("dt-test: load %s: ok\n", name);
		if (fd >= 0)
			close(fd);
	} else if (!strcmp(verb, "unload") && argc == 2) {
		if (syscall(SYS_delete_module, argv[1], O_NONBLOCK) != 0)
			printf("dt-test: unload %s: failed: %s\n", argv[1], strerror(errno));
		else
			printf("dt-test: unload %s: ok\n", argv[1]);
	} else if (!strcmp(verb, "cat") && argc == 2) {
		cat(argv[1]);
	} else if (!strcmp(verb, "exists") && argc == 2) {
		printf("dt-test: exists %s: %s\n", argv[1], access(argv[1], F_OK) == 0 ? "yes" : "no");
	} else if (!strcmp(verb, "driver") && argc == 2) {
		char link[PATH_MAX], target[PATH_MAX];
		ssize_t n;

		snprintf(link, sizeof(link), "%s/driver", argv[1]);
		n = readlink(link, target, sizeof(target) - 1);
		if (n >= 0)
			target[n] = 0;
		printf("dt-test: driver %s: %s\n", argv[1], n >= 0 ? basename(target) : "none");
	} else if (!strcmp(verb, "write") && argc == 3) {
		int fd = open(argv[1], O_WRONLY);
		ssize_t n = fd < 0 ? -1 : write(fd, argv[2], strlen(argv[2]));

		if (n < 0)
			printf("dt-test: write %s: failed: %s\n", rest, strerror(errno));
		else
			printf("dt-test: write %s: ok\n", rest);
		if (fd >= 0)
			close(fd);
	} else if (!strcmp(verb, "count") && argc == 3) {
		count(argv[1], argv[2]);
	} else if (!strcmp(verb, "run") && argc >= 2) {
		run(argv + 1, rest);
	} else if (!strcmp(verb, "say")) {
		printf("dt-test: say %s\n", rest);
	} else {
		printf("dt-test: bad step: %s\n", copy);
	}
	fflush(stdout);
	drain_kmsg();
	fflush(stdout);
}

int main(void)
{
	char line[1024];
	FILE *steps;

	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kmsg < 0)
		printf("dt-test: /dev/kmsg: %s\n", strerror(errno));
	printf("dt-test: start\n");
	drain_kmsg();
	steps = fopen("/steps", "r");
	while (steps && fgets(line, sizeof(line), steps))
		step(line);
	printf("dt-test: done\n");
	fflush(stdout);
	sync();
	reboot(RB_POWER_OFF);
	return 0;
}
