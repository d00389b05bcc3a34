// Copyright 2026 The rdmago Authors.

package trace

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/labtest"
)

// cEnums parses the enums of a C header into name -> value, evaluating the
// forms the RDMA UAPI headers use: implicit increments, literals, earlier
// names, "(1U << X)" and "A + B". path is where the header is installed; in
// the lab the host's root, which has it, is mounted at /host.
func cEnums(t *testing.T, path string) map[string]int64 {
	t.Helper()
	src, err := os.ReadFile(path)
	if os.IsNotExist(err) && labtest.InLab() {
		src, err = os.ReadFile("/host" + path)
	}
	if os.IsNotExist(err) {
		labtest.Missing(t, "%s not installed (apt-get install linux-libc-dev)", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	s := regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(string(src), "")
	s = regexp.MustCompile(`//[^\n]*`).ReplaceAllString(s, "")
	vals := map[string]int64{}
	for _, m := range regexp.MustCompile(`#define\s+(\w+)\s+\(?(\d+)U?\)?\s*\n`).FindAllStringSubmatch(s, -1) {
		v, _ := strconv.ParseInt(m[2], 0, 64)
		vals[m[1]] = v
	}
	var eval func(string) (int64, bool)
	eval = func(e string) (int64, bool) {
		e = strings.TrimSpace(e)
		for strings.HasPrefix(e, "(") && strings.HasSuffix(e, ")") {
			e = strings.TrimSpace(e[1 : len(e)-1])
		}
		if a, b, ok := strings.Cut(e, "<<"); ok {
			x, ok1 := eval(a)
			y, ok2 := eval(b)
			return x << y, ok1 && ok2
		}
		if a, b, ok := strings.Cut(e, "+"); ok {
			x, ok1 := eval(a)
			y, ok2 := eval(b)
			return x + y, ok1 && ok2
		}
		if v, err := strconv.ParseInt(strings.TrimRight(e, "UuLl"), 0, 64); err == nil {
			return v, true
		}
		v, ok := vals[e]
		return v, ok
	}
	for _, m := range regexp.MustCompile(`(?s)enum\s*\w*\s*\{(.*?)\};`).FindAllStringSubmatch(s, -1) {
		next := int64(0)
		for _, item := range strings.Split(m[1], ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			name, expr, hasExpr := strings.Cut(item, "=")
			name = strings.TrimSpace(name)
			if hasExpr {
				v, ok := eval(expr)
				if !ok {
					continue
				}
				next = v
			}
			vals[name] = next
			next++
		}
	}
	return vals
}

// TestABINamesMatchHeaders checks every name the tracer prints against the
// installed C headers: the name with its C prefix must be a constant of
// that value.
func TestABINamesMatchHeaders(t *testing.T) {
	verbs := cEnums(t, "/usr/include/rdma/ib_user_verbs.h")
	if verbs["IB_USER_VERBS_CMD_OPEN_QP"] != 40 || verbs["IB_USER_VERBS_EX_CMD_DESTROY_FLOW"] != 51 {
		t.Fatalf("header parser misread ib_user_verbs.h: OPEN_QP=%d DESTROY_FLOW=%d",
			verbs["IB_USER_VERBS_CMD_OPEN_QP"], verbs["IB_USER_VERBS_EX_CMD_DESTROY_FLOW"])
	}
	for v, name := range verbsCmdNames {
		if got, ok := verbs["IB_USER_VERBS_CMD_"+name]; !ok || got != int64(v) {
			t.Errorf("verbs command %d named %q: header has IB_USER_VERBS_CMD_%s = %d (found %v)", v, name, name, got, ok)
		}
	}
	for v, name := range verbsExCmdNames {
		if got, ok := verbs["IB_USER_VERBS_EX_CMD_"+name]; !ok || got != int64(v) {
			// Newer than the installed header: accept only if abi says so too.
			if !ok && v >= abi.IB_USER_VERBS_EX_CMD_MODIFY_CQ {
				continue
			}
			t.Errorf("extended command %d named %q: header has %d (found %v)", v, name, got, ok)
		}
	}
	// Every write command of the header has a name.
	for c, v := range verbs {
		if n, ok := strings.CutPrefix(c, "IB_USER_VERBS_CMD_"); ok && v < abi.IB_USER_VERBS_CMD_THRESHOLD &&
			!strings.HasPrefix(n, "FLAG") && n != "COMMAND_MASK" && n != "THRESHOLD" {
			if got := (ABINames{}).VerbsCommand(uint32(v)); got != n {
				t.Errorf("VerbsCommand(%d) = %q, header calls it %s", v, got, c)
			}
		}
	}

	ioctl := cEnums(t, "/usr/include/rdma/ib_user_ioctl_cmds.h")
	if ioctl["UVERBS_OBJECT_ASYNC_EVENT"] != 16 || ioctl["UVERBS_METHOD_CQ_DESTROY"] != 1 {
		t.Fatalf("header parser misread ib_user_ioctl_cmds.h")
	}
	for v, name := range ioctlObjectNames {
		got, ok := ioctl["UVERBS_OBJECT_"+name]
		if !ok && v > abi.UVERBS_OBJECT_ASYNC_EVENT {
			continue // newer than the installed header
		}
		if !ok || got != int64(v) {
			t.Errorf("ioctl object %d named %q: header has %d (found %v)", v, name, got, ok)
		}
	}
	for obj, methods := range ioctlMethodNames {
		for v, name := range methods {
			found := false
			for _, c := range []string{"UVERBS_METHOD_" + name, "UVERBS_METHOD_" + ioctlObjectNames[obj] + "_" + name} {
				if got, ok := ioctl[c]; ok && got == int64(v) {
					found = true
				}
			}
			if !found && obj <= abi.UVERBS_OBJECT_ASYNC_EVENT && name != "REG_MR" && name != "QUERY_PORT_SPEED" &&
				name != "QUERY_COMP_CNTR_CAPS" && name != "ATTACH_COMP_CNTR" {
				t.Errorf("ioctl method %d of %s named %q: no UVERBS_METHOD_ constant of that value in the header", v, ioctlObjectNames[obj], name)
			}
		}
	}

	cm := cEnums(t, "/usr/include/rdma/rdma_user_cm.h")
	if cm["RDMA_USER_CM_CMD_QUERY"] != 19 {
		t.Fatalf("header parser misread rdma_user_cm.h")
	}
	for c, v := range cm {
		if n, ok := strings.CutPrefix(c, "RDMA_USER_CM_CMD_"); ok {
			if got := (ABINames{}).UCMCommand(uint32(v)); got != n {
				t.Errorf("UCMCommand(%d) = %q, header calls it %s", v, got, c)
			}
		}
	}
}

func TestABINamesUnknown(t *testing.T) {
	n := ABINames{}
	if n.VerbsCommand(200) != "" || n.UCMCommand(999) != "" || n.CMEvent(99) != "" || n.IoctlObject(0x1001) != "" ||
		n.IoctlMethod(abi.UVERBS_OBJECT_CQ, 77) != "" {
		t.Error("an unknown number got a name")
	}
	if got := n.CMEvent(uint32(abi.RDMA_CM_EVENT_ESTABLISHED)); got != "ESTABLISHED" {
		t.Errorf("CMEvent(ESTABLISHED) = %q", got)
	}
	if got := verbsWriteName(n, abi.IB_USER_VERBS_CMD_FLAG_EXTENDED|abi.IB_USER_VERBS_EX_CMD_CREATE_QP); got != "CREATE_QP" {
		t.Errorf("extended CREATE_QP named %q", got)
	}
	if got := verbsWriteName(n, 0x3e); got != "CMD_0x3e" {
		t.Errorf("unknown command named %q", got)
	}
	if got := ioctlName(n, abi.UVERBS_OBJECT_QP, 9); got != "QP.METHOD_0x9" {
		t.Errorf("unknown method named %q", got)
	}
}
