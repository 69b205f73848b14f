"""The candidate's side of the code sandbox: run as source in a fresh ``python -I -S -B``.
Details: docs/reliability.md, "Module notes".
"""

import builtins
import io
import marshal
import os
import sys

SETUP_FAILED = 97
"""exit status when isolation could not be set up (no candidate code ran)"""

_CLONE_NEWNS, _CLONE_NEWUTS, _CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
_CLONE_NEWUSER, _CLONE_NEWPID, _CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT = 1, 2, 4, 8, 32
_MS_NOATIME, _MS_NODIRATIME, _MS_BIND, _MS_PRIVATE, _MS_REC = 1024, 2048, 4096, 1 << 18, 16384
_MS_RELATIME, _MS_STRICTATIME = 1 << 21, 1 << 24
_MNT_DETACH = 2
_PR_SET_PDEATHSIG, _PR_SET_KEEPCAPS, _PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT = 1, 8, 24, 38, 47
_CAP_DAC_READ_SEARCH = 1 << 2
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
_NOBODY = 65534
_SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.cache")
_DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")
# statvfs flags -> mount flags: a bind mount must keep the flags the kernel locked on its source
_LOCKED_FLAGS = ((1, _MS_RDONLY), (2, _MS_NOSUID), (4, _MS_NODEV), (8, _MS_NOEXEC), (1024, _MS_NOATIME),
                 (2048, _MS_NODIRATIME), (4096, _MS_RELATIME))


def _libc():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)

    def call(name, *args):
        result = getattr(libc, name)(*args)
        if result != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, "%s%r: %s" % (name, args, os.strerror(errno)))
    return ctypes, libc, call


def _enter_namespaces(spec):
    """Isolate this process (docs/reliability.md, "Module notes"); returns in the child that runs the candidate."""
    ctypes, libc, call = _libc()
    as_root = os.geteuid() == 0 and not spec.get("force_userns")
    uid, gid = os.getuid(), os.getgid()
    flags = _CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWNET | _CLONE_NEWIPC | _CLONE_NEWUTS
    call("unshare", flags if as_root else flags | _CLONE_NEWUSER)
    if not as_root:
        for name, text in (("setgroups", "deny"), ("uid_map", "0 %d 1" % uid), ("gid_map", "0 %d 1" % gid)):
            with open("/proc/self/" + name, "w") as f:
                f.write(text)

    def mount(source, target, fstype, mflags, data):
        call("mount", None if source is None else source.encode(), target.encode(),
             None if fstype is None else fstype.encode(), ctypes.c_ulong(mflags),
             None if data is None else data.encode())

    def bind(source, target, extra):
        if os.path.isdir(source):
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            open(target, "a").close()
        mount(source, target, None, _MS_BIND, None)
        locked = os.statvfs(target).f_flag
        mflags = _MS_REMOUNT | _MS_BIND | _MS_NOSUID | extra
        mflags |= sum(ms for st, ms in _LOCKED_FLAGS if locked & st)
        mount(None, target, None, mflags, None)

    new_root = spec["mountpoint"]
    mount(None, "/", None, _MS_REC | _MS_PRIVATE, None)
    mount("tmpfs", new_root, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,mode=0755")
    python_paths = [sys.base_prefix] + [p for p in sys.path if p]  # the interpreter and its standard library
    done = []
    for path in sorted(set(_SYSTEM_PATHS + tuple(python_paths)), key=len):
        if not os.path.lexists(path) or any(path == d or path.startswith(d.rstrip("/") + "/") for d in done):
            continue
        target = new_root + path
        if os.path.islink(path) and path in _SYSTEM_PATHS:  # merged /usr: /bin -> usr/bin
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.symlink(os.readlink(path), target)
        elif os.path.exists(path):
            bind(path, target, _MS_RDONLY | _MS_NODEV)
        done.append(path)
    for device in _DEVICES:
        if os.path.exists(device):
            bind(device, new_root + device, 0)
    os.makedirs(new_root + "/tmp")
    mount("tmpfs", new_root + "/tmp", "tmpfs", _MS_NOSUID | _MS_NODEV,
          "size=%d,mode=1777" % spec["tmpfs_bytes"])
    os.chdir(new_root)
    number = _SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError("pivot_root: unknown system call number on %s" % os.uname().machine)
    if libc.syscall(ctypes.c_long(number), b".", b".") != 0:
        raise OSError(ctypes.get_errno(), "pivot_root")
    call("umount2", b".", ctypes.c_int(_MNT_DETACH))
    os.chdir("/")
    mount(None, "/", None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV, None)

    pid = os.fork()
    if pid:  # PID 1's parent: wait, then leave with its status (it dies with us)
        os.closerange(3, 1 << 16)
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        code = os.waitstatus_to_exitcode(status)
        os._exit(code if code >= 0 else 128 - code)
    call("prctl", _PR_SET_PDEATHSIG, 9, 0, 0, 0)
    _drop_privileges(as_root, 0)
    call("prctl", _PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    _seccomp(deny_signals=False)
    os.chdir("/tmp")


def _drop_privileges(become_nobody, keep):
    """Drop every capability but those of the mask ``keep`` (bounding set included); first become nobody if asked."""
    ctypes, libc, call = _libc()
    for cap in range(64):
        if not keep >> cap & 1 and libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # EINVAL past the last capability
    libc.prctl(_PR_CAP_AMBIENT, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL
    if become_nobody:
        call("prctl", _PR_SET_KEEPCAPS, 1 if keep else 0, 0, 0, 0)  # else leaving uid 0 clears them all
        os.setgroups([])
        os.setresgid(_NOBODY, _NOBODY, _NOBODY)
        os.setresuid(_NOBODY, _NOBODY, _NOBODY)
        call("prctl", _PR_SET_KEEPCAPS, 0, 0, 0, 0)
    low, high = keep & 0xFFFFFFFF, keep >> 32
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)(low, low, 0, high, high, 0)  # effective, permitted, inheritable (x2)
    call("capset", header, data)
    call("capget", header, data)
    if list(data) != [low, low, 0, high, high, 0]:
        raise OSError("capabilities left after dropping them: %r" % list(data))


# seccomp (x86_64 only): system calls the candidate never needs, refused with EPERM. They reach
# other processes (ptrace, process_vm_*), change mounts or namespaces, are kernel attack surface
# (keyrings, bpf, perf, userfaultfd, io_uring, file handles, modules, the new mount API), or hold
# memory that RLIMIT_AS does not count (memfd files; SysV shared memory, message queues and
# semaphores and POSIX message queues, which without an IPC namespace outlive the process).
_SECCOMP_DENIED_X86_64 = (
    101, 310, 311,  # ptrace, process_vm_readv, process_vm_writev
    165, 166, 155, 161, 272, 308,  # mount, umount2, pivot_root, chroot, unshare, setns
    428, 429, 430, 431, 432, 442,  # open_tree, move_mount, fsopen, fsconfig, fsmount, mount_setattr
    248, 249, 250, 321, 298, 323,  # add_key, request_key, keyctl, bpf, perf_event_open, userfaultfd
    425, 426, 427, 303, 304,  # io_uring_setup/enter/register, name_to_handle_at, open_by_handle_at
    175, 176, 313, 246, 320,  # init/delete/finit_module, kexec_load, kexec_file_load
    319,  # memfd_create
    29, 30, 31, 67, 68, 69, 70, 71,  # shmget, shmat, shmctl, shmdt, msgget, msgsnd, msgrcv, msgctl
    64, 65, 66, 220,  # semget, semop, semctl, semtimedop
    240, 241, 242, 243, 244, 245,  # mq_open, mq_unlink, mq_timedsend, mq_timedreceive, mq_notify, mq_getsetattr
)
_SECCOMP_SIGNALS_X86_64 = (62, 200, 234, 129, 297, 424, 434, 438)
"""kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_send_signal, pidfd_open, pidfd_getfd:
denied too without a PID namespace, where they would reach this user's other processes"""
_CLONE_NAMESPACES = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
_CLONE3 = 435
_PRLIMIT64 = 302


def _seccomp(deny_signals):
    """Install the filter above (needs no_new_privs); False where it does not apply (not x86_64)."""
    if os.uname().machine != "x86_64":
        return False
    ctypes, libc, call = _libc()
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, deny, kill = 0x7FFF0000, 0x00050000 | 1, 0x80000000  # RET_ALLOW, RET_ERRNO | EPERM, RET_KILL_PROCESS
    prog = [(ld, 0, 0, 4), (jeq, 1, 0, 0xC000003E), (ret, 0, 0, kill),  # only the x86_64 ABI
            (ld, 0, 0, 0), (jge, 0, 1, 0x40000000), (ret, 0, 0, deny)]  # no x32 system calls
    denied = _SECCOMP_DENIED_X86_64 + (_SECCOMP_SIGNALS_X86_64 if deny_signals else ())
    for number in denied:
        prog += [(jeq, 0, 1, number), (ret, 0, 0, deny)]
    prog += [(jeq, 0, 1, _CLONE3), (ret, 0, 0, 0x00050000 | 38)]  # ENOSYS: the C library falls back to clone
    # prlimit64 only on this process (pid 0 or its own; the kernel reads the low 32 bits of the argument)
    prog += [(jeq, 0, 5, _PRLIMIT64), (ld, 0, 0, 16), (jeq, 2, 0, 0), (jeq, 1, 0, os.getpid()),
             (ret, 0, 0, deny), (ret, 0, 0, allow)]
    prog += [(jeq, 0, 3, 56), (ld, 0, 0, 16), (jset, 0, 1, _CLONE_NAMESPACES), (ret, 0, 0, deny),  # clone
             (ret, 0, 0, allow)]

    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    filters = (Filter * len(prog))(*[Filter(*f) for f in prog])
    program = Program(len(prog), filters)
    call("prctl", 22, 2, ctypes.byref(program), 0, 0)  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
    return True


# Landlock (Linux >= 5.13, where enabled): a domain of its own keeps the candidate from every process
# outside it — ptrace and /proc/<pid>/{fd,mem,environ,...} (the kernel's ptrace access check), and from
# ABI 6 signals and abstract unix sockets; from ABI 4 no TCP bind or connect. Device nodes are the
# one filesystem right it handles (a ruleset needs one); reads and writes are left to the user's rights.
_LANDLOCK_CREATE_RULESET, _LANDLOCK_RESTRICT_SELF = 444, 446
_LANDLOCK_FS_MAKE_CHAR_AND_BLOCK = (1 << 6) | (1 << 11)
_LANDLOCK_NET_TCP = (1 << 0) | (1 << 1)  # BIND_TCP, CONNECT_TCP
_LANDLOCK_SCOPES = (1 << 0) | (1 << 1)  # ABSTRACT_UNIX_SOCKET, SIGNAL


def _landlock():
    """Enter a Landlock domain (needs no_new_privs); its ABI version, 0 where the kernel offers none."""
    ctypes, libc, _ = _libc()
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    abi = syscall(ctypes.c_long(_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return 0
    attr = (ctypes.c_uint64 * 3)(_LANDLOCK_FS_MAKE_CHAR_AND_BLOCK, _LANDLOCK_NET_TCP if abi >= 4 else 0,
                                 _LANDLOCK_SCOPES if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = syscall(ctypes.c_long(_LANDLOCK_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size),
                      ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        if syscall(ctypes.c_long(_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return abi


def _contain_process(spec):
    """Without namespaces: a root trainer's candidate becomes nobody; no_new_privs, Landlock, the seccomp filter."""
    call = _libc()[2]
    if os.geteuid() == 0 and not spec.get("keep_root"):
        _drop_privileges(True, _CAP_DAC_READ_SEARCH)
    call("prctl", _PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if spec.get("landlock", True):
        _landlock()
    _seccomp(deny_signals=True)
    for name in ("ctypes", "ctypes._endian", "_ctypes"):  # the tripwire blocks new imports, not cached ones
        sys.modules.pop(name, None)


def _limit_resources(spec):
    import _signal
    import resource
    limits = [
        (resource.RLIMIT_AS, spec["memory_bytes"]),
        (resource.RLIMIT_CPU, spec["cpu_s"]),
        (resource.RLIMIT_FSIZE, spec["fsize_bytes"]),
        (resource.RLIMIT_NOFILE, spec["nofile"]),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, 0),
    ]
    for which, value in limits:
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass
    # Past RLIMIT_FSIZE a write fails with EFBIG instead of killing the child.
    _signal.signal(_signal.SIGXFSZ, _signal.SIG_IGN)


def _install_tripwire(root, violations):
    """Without namespaces only: block the obvious dangerous calls (a guard against accidents, not containment)."""
    import _socket, importlib, posix, resource, shutil, signal, socket, subprocess
    try:
        import _posixsubprocess
    except ImportError:
        _posixsubprocess = None
    write, realpath, join, readlink, getcwd = os.write, os.path.realpath, os.path.join, os.readlink, os.getcwd

    class SandboxViolation(PermissionError):
        """A call the sandbox does not allow."""

    def violation(what):
        violations.append(what)
        try:
            write(2, ("sandbox: blocked " + what + "\n").encode("utf-8", "replace"))
        except OSError:
            pass
        return SandboxViolation("sandbox: " + what + " is not allowed")

    def deny(what):
        def blocked(*args, **kwargs):
            raise violation(what)
        blocked.__name__ = what.rsplit(".", 1)[-1]
        return blocked

    def inside(path, dir_fd=None):
        try:
            if isinstance(path, int):
                full = realpath(readlink("/proc/self/fd/%d" % path))
            else:
                base = readlink("/proc/self/fd/%d" % dir_fd) if dir_fd is not None else getcwd()
                full = realpath(join(base, os.fsdecode(os.fspath(path))))
        except Exception:
            return False
        return full == root or full.startswith(root + os.sep)

    def check(name, path, dir_fd=None):
        if not inside(path, dir_fd):
            raise violation("%s(%r) outside the sandbox directory" % (name, path))

    def patch_os(name, new):
        for mod in (os, posix):
            if hasattr(mod, name):
                setattr(mod, name, new)

    # Processes, sessions, identities, signals to others.
    for name in (
        "fork", "forkpty", "system", "popen", "execv", "execve", "execl", "execle", "execlp",
        "execlpe", "execvp", "execvpe", "spawnv", "spawnve", "spawnl", "spawnle", "spawnlp",
        "spawnlpe", "spawnvp", "spawnvpe", "posix_spawn", "posix_spawnp", "kill", "killpg",
        "setsid", "setpgid", "setpgrp", "setuid", "setgid", "seteuid", "setegid", "setreuid",
        "setregid", "setresuid", "setresgid", "setgroups", "chroot",
    ):
        patch_os(name, deny("os." + name))
    for name in ("run", "call", "check_call", "check_output", "getoutput", "getstatusoutput", "_fork_exec"):
        setattr(subprocess, name, deny("subprocess." + name))

    class DeniedPopen(subprocess.Popen):
        _child_created = False
        def __init__(self, *args, **kwargs):
            raise violation("subprocess.Popen")
        def __del__(self):
            pass
    subprocess.Popen = DeniedPopen
    if _posixsubprocess is not None:
        _posixsubprocess.fork_exec = deny("_posixsubprocess.fork_exec")
    for name in ("pidfd_send_signal", "pthread_kill"):
        if hasattr(signal, name):
            setattr(signal, name, deny("signal." + name))
    # A fresh instance of a built-in module would carry the original functions.
    import _imp
    orig_create_builtin = _imp.create_builtin
    def guarded_create_builtin(spec):
        if spec.name in ("posix", "_posixsubprocess", "_socket", "_signal"):
            raise violation("a fresh instance of built-in module " + spec.name)
        return orig_create_builtin(spec)
    _imp.create_builtin = guarded_create_builtin
    resource.setrlimit = deny("resource.setrlimit")
    resource.prlimit = deny("resource.prlimit")
    importlib.reload = deny("importlib.reload")

    # Filesystem writes outside the working directory.
    def one_path(name):
        orig = getattr(os, name, None)
        if orig is None:
            return
        def wrapper(path, *args, **kwargs):
            check("os." + name, path, kwargs.get("dir_fd"))
            return orig(path, *args, **kwargs)
        wrapper.__name__ = name
        patch_os(name, wrapper)
    for name in (
        "remove", "unlink", "rmdir", "removedirs", "mkdir", "makedirs", "chmod", "lchmod",
        "chown", "lchown", "truncate", "utime", "mkfifo", "mknod", "setxattr", "removexattr",
        "fchmod", "fchown",
    ):
        one_path(name)

    def two_paths(name, check_src=True):
        orig = getattr(os, name, None)
        if orig is None:
            return
        def wrapper(src, dst, *args, **kwargs):
            if check_src:
                check("os." + name, src, kwargs.get("src_dir_fd"))
            check("os." + name, dst, kwargs.get("dst_dir_fd", kwargs.get("dir_fd")))
            return orig(src, dst, *args, **kwargs)
        wrapper.__name__ = name
        patch_os(name, wrapper)
    for name in ("rename", "renames", "replace", "link"):
        two_paths(name)
    two_paths("symlink", check_src=False)  # a link's target is checked when it is written through

    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    orig_os_open = os.open
    def guarded_os_open(path, flags, *args, **kwargs):
        if flags & write_flags:
            check("os.open", path, kwargs.get("dir_fd"))
        return orig_os_open(path, flags, *args, **kwargs)
    patch_os("open", guarded_os_open)

    orig_open = builtins.open
    def guarded_open(file, mode="r", *args, **kwargs):
        if not isinstance(file, int) and any(c in mode for c in "wax+"):
            check("open", file)
        return orig_open(file, mode, *args, **kwargs)
    builtins.open = io.open = guarded_open

    orig_rmtree = shutil.rmtree
    def guarded_rmtree(path, *args, **kwargs):
        check("shutil.rmtree", path, kwargs.get("dir_fd"))
        return orig_rmtree(path, *args, **kwargs)
    guarded_rmtree.avoids_symlink_attacks = orig_rmtree.avoids_symlink_attacks
    shutil.rmtree = guarded_rmtree

    # Network.
    class DeniedSocket(socket.socket):
        def __init__(self, *args, **kwargs):
            raise violation("socket.socket")
    class DeniedRawSocket(_socket.socket):
        def __init__(self, *args, **kwargs):
            raise violation("_socket.socket")
    socket.socket = socket.SocketType = DeniedSocket
    _socket.socket = _socket.SocketType = DeniedRawSocket
    for name in (
        "socketpair", "fromfd", "create_connection", "create_server", "getaddrinfo",
        "gethostbyname", "gethostbyname_ex", "gethostbyaddr", "getnameinfo", "dup",
    ):
        for mod in (socket, _socket):
            if hasattr(mod, name):
                setattr(mod, name, deny("socket." + name))

    # Modules that reach around everything above.
    blocked_modules = {"ctypes", "_ctypes", "cffi", "_testcapi", "_testinternalcapi", "_xxsubinterpreters"}
    class ImportBlocker:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name.partition(".")[0] in blocked_modules:
                raise ImportError("sandbox: module %r is not available" % name, name=name)
            return None
    sys.meta_path.insert(0, ImportBlocker)
    return SandboxViolation


_EXIT_TYPES = ("SystemExit", "KeyboardInterrupt", "GeneratorExit")


def _exc_info(exc):
    return [type(exc).__name__, str(exc)[:300] if not isinstance(exc, MemoryError) else ""]


class _Candidate:
    """The program's namespace and the objects it has handed out by reference."""

    def __init__(self):
        self.namespace = {"__name__": "__sandbox__", "__builtins__": builtins}
        self.objects = []

    def reference(self, obj):
        self.objects.append(obj)
        try:
            truth = bool(obj)
        except BaseException:
            truth = True
        return {"h": len(self.objects) - 1, "b?": truth}

    def resolve(self, tag, payload):
        if tag == "h":
            index = payload["h"]
            if not 0 <= index < len(self.objects):
                raise WireError("no object %d" % index)
            return self.objects[index]
        return self.namespace[payload]

    def encode(self, value):
        return wire_encode(value, self.reference)

    def decode(self, data):
        return wire_decode(data, self.resolve)

    def answer(self, request):
        """One judge request: {"op": ..., ...} -> the value it asks for."""
        op = request["op"]
        if "name" in request:
            target = self.namespace[request["name"]]
        else:
            target = self.resolve("h", request)
        if op == "call":
            args = self.decode(request["args"])
            kwargs = self.decode(request["kwargs"])
            return target(*args, **kwargs)
        if op == "getattr":
            return getattr(target, request["attr"])
        if op == "getitem":
            return target[self.decode(request["key"])]
        if op == "contains":
            return self.decode(request["key"]) in target
        if op == "list":
            return list(target)
        if op == "len":
            return len(target)
        if op == "str":
            return str(target)
        if op == "repr":
            return repr(target)
        raise WireError("unknown request %r" % op)

    def reply(self, request):
        try:
            return wire_dumps({"ok": self.encode(self.answer(request))})
        except BaseException as exc:
            return wire_dumps({"exc": _exc_info(exc)})

    def describe(self, name):
        """What the judge binds to ``name``: a module to import, a remote callable, or a value."""
        value = self.namespace[name]
        if type(value).__name__ == "module":
            return {"module": str(getattr(value, "__name__", ""))}
        if callable(value):
            return {"callable": True}
        return {"value": self.encode(value)}


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_exact(fd, size):
    data = b""
    while len(data) < size:
        chunk = os.read(fd, min(size - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return data


def _run_program(spec, candidate):
    """Run the program, then the tests' import lines; the program's status for the report."""
    try:
        exec(compile(spec["program"], "<program>", "exec"), candidate.namespace)
        for line in spec["imports"]:
            exec(compile(line, "<tests>", "exec"), candidate.namespace)
    except BaseException as exc:
        print_source_traceback(exc, "<program>", spec["program"])
        return _exc_info(exc)
    return "ok"


def _run_calls(spec, candidate, program):
    results = []
    if program == "ok":
        for name, args, kwargs in spec["calls"]:
            try:
                function = candidate.namespace[name]
                value = function(*candidate.decode(args), **candidate.decode(kwargs))
                entry = {"ok": candidate.encode(value)}
                wire_dumps(entry)  # an int too long to print fails here, as the call's error
            except BaseException as exc:
                entry = {"exc": _exc_info(exc)}
            results.append(entry)
    return results


def _serve(spec, candidate, report):
    hello = dict(report)
    if report["program"] == "ok":
        names = {}
        for name in spec["names"]:
            if name in candidate.namespace:
                try:
                    names[name] = candidate.describe(name)
                except BaseException:
                    pass
        hello["names"] = names
    _write_all(spec["reply_fd"], wire_dumps(hello))
    while True:
        header = _read_exact(spec["request_fd"], 4)
        body = header and _read_exact(spec["request_fd"], int.from_bytes(header, "big"))
        if not body:
            return
        _write_all(spec["reply_fd"], candidate.reply(marshal.loads(body)))  # the judge's requests


def _set_up(step, spec):
    """Run an isolation step; if it fails, exit with SETUP_FAILED (no candidate code has run)."""
    try:
        step(spec)
    except BaseException as exc:
        try:
            os.write(2, ("sandbox: isolation setup failed: %r\n" % (exc,)).encode())
        finally:
            os._exit(SETUP_FAILED)


def _main():
    spec = marshal.loads(sys.stdin.buffer.read())  # written by the trainer, not by a candidate
    sys.stdin = io.StringIO("")
    if spec["isolation"] == "namespaces":
        _set_up(_enter_namespaces, spec)
    _limit_resources(spec)
    violations = []
    if spec["isolation"] == "process":
        _set_up(_contain_process, spec)
        _install_tripwire(os.path.realpath(os.getcwd()), violations)
    candidate = _Candidate()
    program = _run_program(spec, candidate)
    report = {"program": program}
    if spec["mode"] == "calls":
        report["calls"] = _run_calls(spec, candidate, program)
    if violations:
        report["violations"] = violations[:20]
    if spec["mode"] == "serve":
        _serve(spec, candidate, report)
    else:
        _write_all(spec["result_fd"], wire_dumps(report))
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(0)


_main()
