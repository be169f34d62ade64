// SPDX-License-Identifier: GPL-2.0
// PID 1 of the arm64 smoke boot (scripts/arm64-smoke.sh): loads each module given in
// /modules.list (one path per line, in load order) with finit_module, runs each command of
// /commands.list (a program and its arguments, split at spaces) while they are loaded, prints
// one "arm64-smoke:" line per step, unloads what it loaded (last first) and powers off.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_MODULES 16

static void say_file(const char *what, const char *path)
{
	char buf[256];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (n < 0)
		n = 0;
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = 0;
	printf("arm64-smoke: %s: %s\n", what, fd < 0 ? strerror(errno) : buf);
	if (fd >= 0)
		close(fd);
}

/* Runs one line of /commands.list; its output goes to the console. */
static void run(char *line)
{
	char *argv[16];
	int argc = 0, status;
	pid_t pid;

	for (char *t = strtok(line, " \n"); t && argc < 15; t = strtok(NULL, " \n"))
		argv[argc++] = t;
	argv[argc] = NULL;
	if (!argc)
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execv(argv[0], argv);
		printf("arm64-smoke: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		printf("arm64-smoke: run %s: fork/wait failed: %s\n", argv[0], strerror(errno));
		return;
	}
	printf("arm64-smoke: run %s: exit %d\n", argv[0], WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

int main(void)
{
	char names[MAX_MODULES][64], path[256], attr[320];
	int loaded[MAX_MODULES] = { 0 }, n = 0;
	struct utsname u;
	FILE *list;

	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	uname(&u);
	printf("arm64-smoke: kernel %s %s\n", u.release, u.machine);
	list = fopen("/modules.list", "r");
	while (list && n < MAX_MODULES && fgets(path, sizeof(path), list)) {
		const char *base;
		char *dot;
		int fd;

		path[strcspn(path, "\n")] = 0;
		base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		snprintf(names[n], sizeof(names[n]), "%.63s", base);
		dot = strstr(names[n], ".ko");
		if (dot)
			*dot = 0;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || syscall(SYS_finit_module, fd, "", 0) != 0) {
			printf("arm64-smoke: load %s: failed: %s\n", names[n], strerror(errno));
		} else {
			loaded[n] = 1;
			printf("arm64-smoke: load %s: ok\n", names[n]);
			snprintf(attr, sizeof(attr), "/sys/module/%.63s/initstate", names[n]);
			say_file("initstate", attr);
		}
		if (fd >= 0)
			close(fd);
		n++;
	}
	list = fopen("/commands.list", "r");
	while (list && fgets(path, sizeof(path), list))
		run(path);
	while (n-- > 0) {
		if (!loaded[n])
			continue;
		if (syscall(SYS_delete_module, names[n], O_NONBLOCK) != 0)
			printf("arm64-smoke: unload %s: failed: %s\n", names[n], strerror(errno));
		else
			printf("arm64-smoke: unload %s: ok\n", names[n]);
	}
	printf("arm64-smoke: done\n");
	fflush(stdout);
	sync();
	reboot(RB_POWER_OFF);
	return 0;
}
