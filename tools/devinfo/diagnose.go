// Copyright 2026 The rdmago Authors.

package devinfo

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/rdmago/rdmago/internal/rdmanl"
	"github.com/rdmago/rdmago/internal/sysfs"
	"github.com/rdmago/rdmago/uverbs"
)

// Verdict is the outcome of one check.
type Verdict string

// Verdicts, from good to bad. FAIL means RDMA cannot be used as things are.
const (
	OK   Verdict = "ok"
	Warn Verdict = "warn"
	Fail Verdict = "FAIL"
)

// Check is one diagnosis: what was looked at, the verdict, what was found
// and, unless the verdict is OK, the fix in one line.
type Check struct {
	ID      string  `json:"id"` // stable name: "kernel", "module/ib_uverbs", "port/rxe0/1", ...
	Verdict Verdict `json:"verdict"`
	Detail  string  `json:"detail"`
	Fix     string  `json:"fix,omitempty"`
}

// Report is the result of Diagnose.
type Report struct {
	Checks []Check `json:"checks"`
}

// Blocking reports whether any check failed.
func (r Report) Blocking() bool {
	for _, c := range r.Checks {
		if c.Verdict == Fail {
			return true
		}
	}
	return false
}

// Find returns the check with the given ID.
func (r Report) Find(id string) (Check, bool) {
	for _, c := range r.Checks {
		if c.ID == id {
			return c, true
		}
	}
	return Check{}, false
}

func (r *Report) add(id string, v Verdict, fix, format string, args ...any) {
	r.Checks = append(r.Checks, Check{ID: id, Verdict: v, Detail: fmt.Sprintf(format, args...), Fix: fix})
}

// MinMemlock is the RLIMIT_MEMLOCK below which diagnose warns: less than
// this cannot pin the buffers of a useful transfer.
const MinMemlock = 64 << 20

// FailMemlock is the RLIMIT_MEMLOCK below which registering a memory region
// of even a few pages is likely to fail: diagnose fails.
const FailMemlock = 1 << 20

// memlockFix is the one-line fix for a low RLIMIT_MEMLOCK.
const memlockFix = "ulimit -l unlimited (for this shell; raising it past the hard limit needs root), or in /etc/security/limits.conf: '* soft memlock unlimited' and '* hard memlock unlimited' (systemd services: LimitMEMLOCK=infinity)"

// Diagnose runs every check. It never stops early: each problem gets its
// own line.
func (s *System) Diagnose() Report {
	var r Report
	s.checkKernel(&r)
	devs, devErr := s.FS.Devices()
	s.checkModules(&r, devs)
	s.checkNetlink(&r)
	switch {
	case errors.Is(devErr, sysfs.ErrNoRDMA):
		r.add("devices", Fail, "load the RDMA stack first (see above)", "no RDMA devices: the kernel has no RDMA class")
	case devErr != nil:
		r.add("devices", Fail, "check that /sys is mounted (mount -t sysfs sysfs /sys)", "cannot list RDMA devices: %v", devErr)
	case len(devs) == 0:
		r.add("devices", Fail, "rdmainfo link add rxe0 type rxe netdev IFNAME (Soft-RoCE on an Ethernet interface)", "no RDMA devices")
	default:
		names := make([]string, len(devs))
		for i, d := range devs {
			names[i] = d.Name
		}
		r.add("devices", OK, "", "%d RDMA device(s): %s", len(devs), strings.Join(names, ", "))
	}
	for _, d := range devs {
		s.checkUverbs(&r, d)
	}
	s.checkRDMACM(&r)
	for _, d := range devs {
		for _, p := range d.Ports {
			s.checkPort(&r, d, p)
		}
	}
	s.checkMemlock(&r)
	return r
}

func (s *System) checkKernel(r *Report) {
	if s.FS.Exists("/sys/class/infiniband") {
		r.add("kernel", OK, "", "RDMA core is loaded (/sys/class/infiniband exists)")
		return
	}
	r.add("kernel", Fail, "modprobe ib_core (the kernel needs CONFIG_INFINIBAND; minimal and some cloud kernels lack it)",
		"the kernel has no RDMA support loaded: no /sys/class/infiniband")
}

// checkModules looks at the modules RDMA use needs: ib_core, ib_uverbs
// (verbs), rdma_ucm (rdma_cm from user space), and, for Soft-RoCE, rdma_rxe
// and the crc32 algorithm it computes the ICRC with.
func (s *System) checkModules(r *Report, devs []sysfs.Device) {
	loaded, err := s.FS.Modules()
	if err != nil {
		r.add("modules", Warn, "mount -t proc proc /proc", "cannot read the module list: %v", err)
		loaded = map[string]bool{}
	}
	rel := s.FS.Release()
	fixFor := func(mod string, st sysfs.ModuleState) string {
		if st == sysfs.ModuleMissing && rel != "" {
			return fmt.Sprintf("modprobe %s (no %s module found for kernel %s: install its modules package, or use a kernel with it enabled)", mod, mod, rel)
		}
		return "modprobe " + mod
	}
	for _, m := range []struct{ name, why string }{
		{"ib_core", "the RDMA core"},
		{"ib_uverbs", "user-space verbs: /dev/infiniband/uverbs*"},
		{"rdma_ucm", "user-space rdma_cm: /dev/infiniband/rdma_cm"},
	} {
		st := s.FS.Module(m.name, loaded, rel)
		if st.Present() {
			r.add("module/"+m.name, OK, "", "%s: %s (%s)", m.name, st, m.why)
		} else {
			r.add("module/"+m.name, Fail, fixFor(m.name, st), "%s: %s — needed for %s", m.name, st, m.why)
		}
	}
	rxeDev, otherDev := false, false
	for _, d := range devs {
		if isRXE(d) {
			rxeDev = true
		} else {
			otherDev = true
		}
	}
	st := s.FS.Module("rdma_rxe", loaded, rel)
	switch {
	case st.Present():
		r.add("module/rdma_rxe", OK, "", "rdma_rxe: %s (Soft-RoCE)", st)
	case otherDev:
		r.add("module/rdma_rxe", OK, "", "rdma_rxe: %s (not needed: hardware RDMA devices are present)", st)
	default:
		r.add("module/rdma_rxe", Fail, fixFor("rdma_rxe", st), "rdma_rxe: %s, and there is no hardware RDMA device to use instead", st)
	}
	if st.Present() || !otherDev {
		crc, err := s.FS.Crypto("crc32")
		switch {
		case kernelAtLeast(rel, 6, 15):
			// "RDMA/rxe: switch to using the crc32 library" (Linux 6.15)
			// dropped the crypto API lookup that failed without crc32.
			r.add("crc32", OK, "", "Linux %s computes the Soft-RoCE ICRC with the crc32 library: no crypto module needed", rel)
		case err != nil:
			r.add("crc32", Warn, "mount -t proc proc /proc", "cannot read /proc/crypto: %v", err)
		case crc:
			r.add("crc32", OK, "", "the crc32 algorithm Soft-RoCE needs is available")
		case rxeDev:
			r.add("crc32", Warn, "modprobe crc32_generic", "no crc32 in /proc/crypto, yet an rxe device exists")
		default:
			r.add("crc32", Fail, "modprobe crc32_generic (or crc32-pclmul) before creating an rxe link",
				"no crc32 algorithm in /proc/crypto: creating an rxe device fails with 'failed to init crc32 algorithm err:-2'")
		}
	}
}

// kernelAtLeast reports whether release ("6.12.117+deb13-amd64") is at
// least major.minor; false when it cannot be parsed.
func kernelAtLeast(release string, major, minor int) bool {
	var ma, mi int
	if n, _ := fmt.Sscanf(release, "%d.%d", &ma, &mi); n != 2 {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// isRXE reports whether d is a Soft-RoCE device: rxe publishes its netdev in
// the "parent" attribute and has no hardware parent; its name is usually
// rxeN.
func isRXE(d sysfs.Device) bool {
	return d.NodeDesc == "rxe" || d.HCAType == "" && d.BoardID == "" && strings.HasPrefix(d.Name, "rxe")
}

func (s *System) checkNetlink(r *Report) {
	if s.NL != nil {
		return
	}
	if !s.FS.Exists("/sys/class/infiniband") {
		return // already reported as the kernel check
	}
	err := s.NLErr
	if err == nil {
		err = errors.New("not connected")
	}
	r.add("netlink", Warn, "run rdmainfo where it can open a NETLINK_RDMA socket (same network namespace as the devices)",
		"RDMA netlink unavailable (links, resources and netdevs of ports cannot be listed): %v", err)
}

// canRW reports whether creds may open node read-write by its mode bits.
func canRW(n sysfs.DevNode, c Creds) bool {
	if c.UID == 0 {
		return true
	}
	perm := n.Mode.Perm()
	if n.UID == c.UID {
		return perm&0o600 == 0o600
	}
	for _, g := range c.GIDs {
		if g == n.GID {
			return perm&0o060 == 0o060
		}
	}
	return perm&0o006 == 0o006
}

// checkNode checks that a device node exists, that creds may open it by its
// mode, and that it really opens.
func (s *System) checkNode(r *Report, id, path, what, missingFix string) {
	n, err := s.FS.DevNode(path)
	if errors.Is(err, sysfs.ErrNoDevNode) {
		r.add(id, Fail, missingFix, "%s: %s does not exist", what, path)
		return
	}
	if err != nil {
		r.add(id, Fail, "check /dev", "%s: %v", what, err)
		return
	}
	if !canRW(n, s.Creds) {
		fix := fmt.Sprintf("chmod 0666 %s, or a udev rule: KERNEL==\"%s\", MODE=\"0666\"", path, path[strings.LastIndex(path, "/")+1:])
		if n.GID != 0 && n.Mode.Perm()&0o060 == 0o060 {
			fix = fmt.Sprintf("add the user to group %d (usermod -aG GROUP USER) or %s", n.GID, fix)
		}
		r.add(id, Fail, fix, "%s: %s is %s owned by %d:%d, not read-write for uid %d", what, path, n.Perm(), n.UID, n.GID, s.Creds.UID)
		return
	}
	if s.Open != nil {
		if err := s.Open(path); err != nil {
			fix := "check the device node (ls -l " + path + ") and the module that serves it"
			if errors.Is(err, fs.ErrPermission) {
				fix = "chmod 0666 " + path + " (an LSM or container policy may also deny it)"
			}
			r.add(id, Fail, fix, "%s: open %s: %v", what, path, err)
			return
		}
	}
	r.add(id, OK, "", "%s: %s (%s) opens read-write", what, path, n.Perm())
}

func (s *System) checkUverbs(r *Report, d sysfs.Device) {
	id := "uverbs/" + d.Name
	if d.Uverbs == "" {
		r.add(id, Fail, "modprobe ib_uverbs", "%s has no uverbs device: ib_uverbs is not loaded", d.Name)
		return
	}
	fix := "mount devtmpfs on /dev, or create the node from /sys/class/infiniband_verbs/" + d.Uverbs + "/dev"
	if dev, err := s.FS.ReadString("/sys/class/infiniband_verbs/" + d.Uverbs + "/dev"); err == nil {
		fix = fmt.Sprintf("mknod -m 0666 /dev/infiniband/%s c %s (or mount devtmpfs on /dev)", d.Uverbs, strings.Replace(dev, ":", " ", 1))
	}
	s.checkNode(r, id, "/dev/infiniband/"+d.Uverbs, d.Name+" verbs", fix)
}

func (s *System) checkRDMACM(r *Report) {
	if !s.FS.Exists("/sys/class/infiniband") {
		return
	}
	fix := "modprobe rdma_ucm"
	if dev, err := s.FS.ReadString("/sys/class/misc/rdma_cm/dev"); err == nil {
		fix = fmt.Sprintf("mknod -m 0666 /dev/infiniband/rdma_cm c %s (or mount devtmpfs on /dev)", strings.Replace(dev, ":", " ", 1))
	}
	s.checkNode(r, "rdma_cm", "/dev/infiniband/rdma_cm", "rdma_cm", fix)
}

// checkPort checks the port state, the netdev under it, its addresses, its
// MTU and the GID entry of each address.
func (s *System) checkPort(r *Report, d sysfs.Device, p sysfs.Port) {
	dp := fmt.Sprintf("%s/%d", d.Name, p.Num)
	netdev := ""
	nds := s.portNetdevs(d, s.netlinkDevice(d.Name))
	for i := range d.Ports {
		if d.Ports[i].Num == p.Num {
			netdev = nds[i]
		}
	}
	var nd sysfs.Netdev
	var ndErr error
	if netdev != "" {
		nd, ndErr = s.FS.Netdev(netdev)
	}

	// Port state, with the cause when it is the netdev.
	if p.Active() {
		r.add("port/"+dp, OK, "", "port %s is %s (%s)", dp, p.StateName, p.PhysStateName)
	} else {
		fix := "check the cable and the switch port (ibstat, the subnet manager for InfiniBand)"
		cause := ""
		switch {
		case netdev != "" && ndErr == nil && !nd.AdminUp():
			fix, cause = "ip link set "+netdev+" up", ": its netdev "+netdev+" is down"
		case netdev != "" && ndErr == nil && nd.OperState != "up":
			fix = "bring up the link under " + netdev + " (for a veth, set its peer up too)"
			cause = fmt.Sprintf(": netdev %s is up but its link is %s (no carrier)", netdev, nd.OperState)
		case p.LinkLayer == "Ethernet" && netdev == "":
			fix = "recreate the link: rdmainfo link del " + d.Name + " && rdmainfo link add " + d.Name + " type rxe netdev IFNAME"
			cause = ": no netdev is attached"
		}
		r.add("port/"+dp, Fail, fix, "port %s is %s (%s)%s", dp, p.StateName, p.PhysStateName, cause)
	}
	if p.LinkLayer != "Ethernet" {
		return // the rest is about RoCE
	}

	if netdev == "" {
		r.add("netdev/"+dp, Fail, "recreate the link on an Ethernet interface", "port %s has no netdev", dp)
		return
	}
	if ndErr != nil {
		r.add("netdev/"+dp, Fail, "recreate the link on an existing interface", "netdev %s of %s: %v", netdev, dp, ndErr)
		return
	}
	if nd.AdminUp() && nd.OperState == "up" || nd.AdminUp() && nd.OperState == "unknown" {
		r.add("netdev/"+dp, OK, "", "netdev %s is up (mtu %d)", netdev, nd.MTU)
	} else if !nd.AdminUp() {
		r.add("netdev/"+dp, Fail, "ip link set "+netdev+" up", "netdev %s is down", netdev)
	} else {
		r.add("netdev/"+dp, Fail, "bring up the link under "+netdev+" (for a veth, set its peer up too)", "netdev %s is up but its link is %s", netdev, nd.OperState)
	}

	// MTU: what the netdev MTU makes the RDMA path MTU.
	active := RXEActiveMTU(nd.MTU)
	how := "expected for Soft-RoCE"
	if s.Verbs != nil {
		if v, err := s.Verbs.Query(d.Name); err == nil && p.Num-1 < len(v.Ports) {
			active, how = v.Ports[p.Num-1].ActiveMTU, "reported by the device"
		}
	}
	mtuFix := "ip link set " + netdev + " mtu 1500"
	switch b := uverbs.MTU(active).Bytes(); {
	case RoCERouteMTU(nd.MTU) == 0:
		// The port is ACTIVE with an active MTU of 256 (rxe rounds up), yet
		// rdma_cm refuses the route: see RoCERouteMTU.
		r.add("mtu/"+dp, Fail, mtuFix+" (rdma_cm needs a netdev MTU of at least "+itoa(MinRoCENetdevMTU)+")",
			"netdev %s MTU %d is below %d: rdma_cm cannot resolve a route over it (RESOLVE_ROUTE fails with EINVAL: %d bytes of RoCE headers leave less than 256), although the device reports an active RDMA MTU of %d (%s)",
			netdev, nd.MTU, MinRoCENetdevMTU, RoCEHeaderBytes, b, how)
	case b == 0:
		r.add("mtu/"+dp, Fail, mtuFix, "netdev %s MTU %d is too small for any RDMA MTU", netdev, nd.MTU)
	case b < 1024:
		r.add("mtu/"+dp, Warn, mtuFix+" (or 4176 for a 4096-byte RDMA MTU, if the network allows it)",
			"netdev %s MTU %d gives an active RDMA MTU of only %d (%s)", netdev, nd.MTU, b, how)
	default:
		r.add("mtu/"+dp, OK, "", "netdev %s MTU %d gives an active RDMA MTU of %d (%s)", netdev, nd.MTU, b, how)
	}

	// Addresses and their RoCE v2 GIDs.
	if s.Addrs == nil {
		return
	}
	addrs, err := s.Addrs.Addrs(netdev)
	if err != nil {
		r.add("addr/"+dp, Warn, "", "cannot list the addresses of %s: %v", netdev, err)
		return
	}
	has4 := false
	for _, a := range addrs {
		if a.Addr().Is4() {
			has4 = true
		}
	}
	if has4 {
		r.add("addr/"+dp, OK, "", "netdev %s has an IPv4 address", netdev)
	} else {
		r.add("addr/"+dp, Warn, "ip addr add ADDRESS/PREFIX dev "+netdev,
			"netdev %s has no IPv4 address: rdma_cm over IPv4 and its RoCE v2 GID need one", netdev)
	}
	rows := gidRows(d.Name, p)
	for _, a := range addrs {
		ip := a.Addr().Unmap()
		id := "gid/" + dp + "/" + ip.String()
		var v1, v2 *GIDRow
		for i := range rows {
			if rows[i].IP == ip.WithZone("") {
				switch rows[i].Version {
				case "v2":
					if v2 == nil {
						v2 = &rows[i]
					}
				case "v1":
					if v1 == nil {
						v1 = &rows[i]
					}
				}
			}
		}
		switch {
		case v2 != nil:
			r.add(id, OK, "", "%s has RoCE v2 GID index %d on %s", ip, v2.Index, dp)
		case !p.Active():
			r.add(id, Fail, "bring the port up first (see above); the kernel fills the GID table from the netdev's addresses",
				"no RoCE v2 GID for %s on %s while the port is down", ip, dp)
		case v1 != nil:
			r.add(id, Warn, fmt.Sprintf("mkdir -p /sys/kernel/config/rdma_cm/%s && echo 'RoCE v2' > /sys/kernel/config/rdma_cm/%s/ports/%d/default_roce_mode", d.Name, d.Name, p.Num),
				"%s has only a RoCE v1 GID (index %d) on %s", ip, v1.Index, dp)
		default:
			r.add(id, Fail, fmt.Sprintf("re-add the address (ip addr del %s dev %s; ip addr add %s dev %s) so the kernel adds its GID, then check `rdmainfo gids`", a, netdev, a, netdev),
				"no GID for %s on %s", ip, dp)
		}
	}
}

func (s *System) netlinkDevice(name string) *rdmanl.Device {
	if d, ok := s.netlinkDevices()[name]; ok {
		return &d
	}
	return nil
}

func (s *System) checkMemlock(r *Report) {
	if s.Memlock == nil {
		return
	}
	cur, max, err := s.Memlock()
	if err != nil {
		r.add("memlock", Warn, "", "cannot read RLIMIT_MEMLOCK: %v", err)
		return
	}
	show := func(v uint64) string {
		if v == UnlimitedMemlock {
			return "unlimited"
		}
		return sizeString(v)
	}
	switch {
	case cur == UnlimitedMemlock || cur >= MinMemlock:
		r.add("memlock", OK, "", "RLIMIT_MEMLOCK is %s (hard %s)", show(cur), show(max))
	case s.Creds.CapIPCLck:
		r.add("memlock", Warn, memlockFix,
			"RLIMIT_MEMLOCK is only %s; this process has CAP_IPC_LOCK, which exempts it, but the same program run by another user will fail to register memory", show(cur))
	case cur < FailMemlock:
		r.add("memlock", Fail, memlockFix,
			"RLIMIT_MEMLOCK is %s (hard %s): registering a memory region larger than that fails with ENOMEM", show(cur), show(max))
	default:
		r.add("memlock", Warn, memlockFix,
			"RLIMIT_MEMLOCK is %s (hard %s): memory regions are limited to that much pinned memory in total; %s or more is recommended", show(cur), show(max), sizeString(MinMemlock))
	}
}

func sizeString(v uint64) string {
	switch {
	case v >= 1<<30 && v%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", v>>30)
	case v >= 1<<20 && v%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", v>>20)
	case v >= 1<<10 && v%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", v>>10)
	}
	return fmt.Sprintf("%d bytes", v)
}

// WriteReport prints one line per check, and the fix under each one that is
// not OK, then a summary line.
func WriteReport(w io.Writer, r Report) {
	nw, nf := 0, 0
	for _, c := range r.Checks {
		tag := map[Verdict]string{OK: "[ ok ]", Warn: "[warn]", Fail: "[FAIL]"}[c.Verdict]
		fmt.Fprintf(w, "%s %-22s %s\n", tag, c.ID, c.Detail)
		if c.Fix != "" && c.Verdict != OK {
			fmt.Fprintf(w, "       %-22s fix: %s\n", "", c.Fix)
		}
		switch c.Verdict {
		case Warn:
			nw++
		case Fail:
			nf++
		}
	}
	switch {
	case nf > 0:
		fmt.Fprintf(w, "%d problem(s) block RDMA, %d warning(s)\n", nf, nw)
	case nw > 0:
		fmt.Fprintf(w, "RDMA is usable, with %d warning(s)\n", nw)
	default:
		fmt.Fprintln(w, "all clear: RDMA is usable")
	}
}
