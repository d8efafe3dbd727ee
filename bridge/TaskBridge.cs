// Completion of a .NET Task becomes one byte on a pipe, so Python awaits .NET
// work on its event loop without parking a thread per call (see
// tether_clr/clr/tasks.py).
using System;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;

namespace Tether.Bridge
{
    public static class TaskBridge
    {
        // Writes one byte to `fd` once `task` has finished (ran to completion, faulted
        // or cancelled), then closes `fd`: the bridge owns it from this call on. The
        // Python side waits for the read end to become readable. No .NET thread ever
        // calls into Python, so a .NET garbage collection can never wait on the GIL.
        public static void SignalOnCompletion(Task task, int fd)
        {
            if (task == null) throw new ArgumentNullException("task");
            task.ContinueWith(
                delegate(Task _) { Posix.SignalAndClose(fd); },
                CancellationToken.None,
                TaskContinuationOptions.ExecuteSynchronously,
                TaskScheduler.Default);
        }

        // The exception a faulted task carries, with AggregateException and
        // TargetInvocationException layers removed.
        public static Exception Unwrap(Exception error)
        {
            while (true)
            {
                var aggregate = error as AggregateException;
                if (aggregate != null && aggregate.InnerExceptions.Count == 1) { error = aggregate.InnerExceptions[0]; continue; }
                var invocation = error as System.Reflection.TargetInvocationException;
                if (invocation != null && invocation.InnerException != null) { error = invocation.InnerException; continue; }
                return error;
            }
        }

        public static string Describe(Exception error)
        {
            error = Unwrap(error);
            return error.GetType().FullName + ": " + error.Message;
        }

        public static bool IsCancellation(Exception error)
        {
            return Unwrap(error) is OperationCanceledException;
        }

        // The bridge's own binder failed: the arguments never reached the method.
        public static bool IsBindingError(Exception error)
        {
            return Unwrap(error) is ArgumentBindingException;
        }

    }

    static class Posix
    {
        static readonly byte[] One = { 1 };

        [DllImport("libc", EntryPoint = "write", SetLastError = true)]
        static extern IntPtr WriteLibc(int fd, byte[] buffer, IntPtr count);

        [DllImport("libc", EntryPoint = "close", SetLastError = true)]
        static extern int CloseLibc(int fd);

        [DllImport("libc.so.6", EntryPoint = "write", SetLastError = true)]
        static extern IntPtr WriteLibc6(int fd, byte[] buffer, IntPtr count);

        [DllImport("libc.so.6", EntryPoint = "close", SetLastError = true)]
        static extern int CloseLibc6(int fd);

        // Mono maps "libc" through its dllmap; CoreCLR may need the versioned soname.
        public static void SignalAndClose(int fd)
        {
            try
            {
                WriteLibc(fd, One, (IntPtr)1);
                CloseLibc(fd);
            }
            catch (DllNotFoundException)
            {
                WriteLibc6(fd, One, (IntPtr)1);
                CloseLibc6(fd);
            }
            catch (EntryPointNotFoundException)
            {
                WriteLibc6(fd, One, (IntPtr)1);
                CloseLibc6(fd);
            }
        }
    }

    // Raised when JSON arguments cannot be bound to a .NET parameter; becomes INVALID_ARGS.
    public sealed class ArgumentBindingException : Exception
    {
        public ArgumentBindingException(string message) : base(message) { }
    }
}
