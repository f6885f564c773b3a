package main

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

// personalities are what this binary does when an image runs it under
// one of these names.
var personalities = map[string]func() int{
	"nginx":         nginxMaster,
	nginxTitle:      func() int { return webServer("nginx", ":80") },
	"httpd":         func() int { return webServer("httpd", ":80") },
	"hostnet-nginx": func() int { return webServer("nginx", ":12003") },
	"nnp":           effectiveUID,
	"pause":         pause,
	"nc":            netcat,
	"dig":           dig,
	"getent":        getent,
}

// nginxTitle is the command line real nginx shows for its master
// process; critest waits for it in /proc/1/cmdline.
const nginxTitle = "nginx: master process nginx"

// nginxMaster re-executes this binary under nginx's title. The path
// stays /usr/sbin/nginx, so the process is still named nginx (pidof).
func nginxMaster() int {
	exe, err := os.Executable()
	if err == nil {
		err = syscall.Exec(exe, []string{nginxTitle}, os.Environ())
	}
	fmt.Fprintln(os.Stderr, "nginx:", err)
	return 1
}

// exitOnTerm makes SIGTERM and SIGINT end the process: as a container's
// init (pid 1) it would otherwise ignore them, as the kernel drops
// signals pid 1 has no handler for.
func exitOnTerm() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-c
		os.Exit(0)
	}()
}

// webServer answers every GET with 200, writes its pid where nginx does
// (critest reads /var/run/nginx.pid) and logs its name, which critest
// looks for in the container's log.
func webServer(name, addr string) int {
	exitOnTerm()
	if err := os.WriteFile("/var/run/"+name+".pid", fmt.Appendf(nil, "%d\n", os.Getpid()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
	}
	fmt.Fprintf(os.Stderr, "%s: listening on %s\n", name, addr)
	err := http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "<html><body>%s test server</body></html>\n", name)
	}))
	fmt.Fprintln(os.Stderr, name+":", err)
	return 1
}

// effectiveUID is the nonewprivs image's program: installed setuid root,
// it prints the effective uid it got, 0 unless no_new_privs kept the
// setuid bit from working.
func effectiveUID() int {
	fmt.Printf("Effective uid: %d\n", os.Geteuid())
	return 0
}

// pause holds a pod's namespaces until told to stop.
func pause() int {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
	return 0
}
