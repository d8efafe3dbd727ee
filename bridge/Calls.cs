// One .NET tool call as the Python side drives it: one crossing to start it, one to
// finish it (see tether_clr/clr/tasks.py). Completion is one byte written to a file
// descriptor the Python side owns and waits on, so no .NET thread ever calls into
// Python: a .NET garbage collection can never wait on the GIL.
//
// A call in flight is known by that descriptor: the Python side gives each call in
// flight a pipe of its own, so the number is unique while the call runs, and an int
// crosses pythonnet more cheaply than an object.
using System;
using System.Collections.Concurrent;
using System.Reflection;
using System.Threading;
using System.Threading.Tasks;

namespace Tether.Bridge
{
    // What a hosted tool offers a PendingCall: JSON text in, JSON text out, and which
    // failures mean "the arguments could not be bound" (INVALID_ARGS) rather than
    // "the tool failed" (TOOL_ERROR).
    public interface IJsonFunction
    {
        Task<string> InvokeAsync(string argumentsJson, CancellationToken token);
        bool IsArgumentError(Exception error);
        // The assembly the tool's code lives in: the DiagnosticSource it binds is found from it (Tracing.cs).
        Assembly ToolAssembly { get; }
    }

    public sealed class PendingCall
    {
        // Finish() returns the result JSON as it is, or one of these letters followed by a
        // message. No JSON text starts with an upper-case letter, so the two never mix.
        public const char Cancelled = 'C';
        public const char ArgumentError = 'A';
        public const char ToolError = 'E';

        static readonly ConcurrentDictionary<int, PendingCall> InFlight = new ConcurrentDictionary<int, PendingCall>();

        readonly IJsonFunction _function;
        readonly CancellationTokenSource _source = new CancellationTokenSource();
        Task<string> _task;

        PendingCall(IJsonFunction function)
        {
            _function = function;
        }

        // Starts a call of `function` with a token of its own (already cancelled when
        // `cancelled`), and writes one byte to `fd` once it has finished (ran to completion,
        // faulted or was cancelled). `fd` stays the caller's: it is written once and never
        // closed here. A synchronous throw by the tool is a faulted call.
        public static void Start(IJsonFunction function, string argumentsJson, int fd, bool cancelled)
        {
            if (function == null) throw new ArgumentNullException("function");
            Begin(function, argumentsJson, fd, cancelled, null);
        }

        // Start, with the tool invoked under an Activity whose parent is the W3C trace context
        // `traceParent` / `traceState` (Tracing.cs). True when the tool got that parent; false when
        // the call started without one (no System.Diagnostics.DiagnosticSource for this tool, or a
        // header it refused).
        public static bool StartTraced(IJsonFunction function, string argumentsJson, int fd, bool cancelled, string traceParent, string traceState)
        {
            if (function == null) throw new ArgumentNullException("function");
            var api = ActivityParent.For(function.ToolAssembly);
            ActivityParent.Carrier carrier = null;
            if (api != null)
            {
                try { carrier = api.Enter(traceParent, traceState); }
                catch (Exception) { carrier = null; } // a malformed header, a listener that throws: no parent
            }
            try { Begin(function, argumentsJson, fd, cancelled, carrier); }
            catch
            {
                if (carrier != null) carrier.Stop();
                throw;
            }
            finally
            {
                if (carrier != null) carrier.Leave(); // this thread's Activity.Current as it was
            }
            return carrier != null;
        }

        static void Begin(IJsonFunction function, string argumentsJson, int fd, bool cancelled, ActivityParent.Carrier carrier)
        {
            var call = new PendingCall(function);
            if (!InFlight.TryAdd(fd, call)) throw new InvalidOperationException("a call already signals on descriptor " + fd);
            if (cancelled) call._source.Cancel();
            Task<string> task;
            try { task = function.InvokeAsync(argumentsJson, call._source.Token); }
            catch (Exception error) { task = Completion.Faulted(error); }
            call._task = task ?? Completion.Faulted(new InvalidOperationException("the tool returned no task"));
            call._task.ContinueWith(
                delegate(Task<string> _)
                {
                    if (carrier != null) carrier.Stop();
                    Posix.Signal(fd);
                },
                CancellationToken.None,
                TaskContinuationOptions.ExecuteSynchronously,
                TaskScheduler.Default);
        }

        // Asks the call signalling on `fd` to stop (its token fires); the caller still waits
        // for the byte. The token's callbacks run here: one that throws surfaces here too.
        public static void Cancel(int fd)
        {
            PendingCall call;
            if (InFlight.TryGetValue(fd, out call)) call._source.Cancel();
        }

        // The outcome of the call signalling on `fd`, once its byte has been written: the
        // result JSON, or a status letter and a message. Forgets the call: ask once.
        public static string Finish(int fd)
        {
            PendingCall call;
            if (!InFlight.TryRemove(fd, out call)) throw new InvalidOperationException("no call signals on descriptor " + fd);
            return call.Outcome();
        }

        string Outcome()
        {
            var task = _task;
            if (!task.IsCompleted) throw new InvalidOperationException("the .NET call has not finished");
            _source.Dispose();
            if (task.IsFaulted) return Failure(task.Exception);
            if (task.IsCanceled) return Cancelled + "the .NET task was cancelled";
            return task.Result;
        }

        string Failure(Exception error)
        {
            var inner = TaskBridge.Unwrap(error);
            if (inner is OperationCanceledException) return Cancelled + inner.GetType().FullName + ": " + inner.Message;
            if (_function.IsArgumentError(inner)) return ArgumentError + inner.Message;
            return ToolError + TaskBridge.Describe(inner);
        }
    }
}
