// One .NET tool call as the Python side drives it: one crossing to start it, one to
// finish it (see tether_clr/clr/tasks.py). Completion is one byte written to a file
// descriptor the Python side owns and waits on, so no .NET thread ever calls into
// Python: a .NET garbage collection can never wait on the GIL.
using System;
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
    }

    public sealed class PendingCall
    {
        // Finish() returns the result JSON as it is, or one of these letters followed by a
        // message. No JSON text starts with an upper-case letter, so the two never mix.
        public const char Cancelled = 'C';
        public const char ArgumentError = 'A';
        public const char ToolError = 'E';

        readonly IJsonFunction _function;
        readonly CancellationTokenSource _source = new CancellationTokenSource();
        readonly Task<string> _task;

        // Starts the call with a token of its own (already cancelled when `cancelled`), and
        // writes one byte to `fd` once it has finished (ran to completion, faulted or was
        // cancelled). `fd` stays the caller's: it is written once and never closed here.
        // A synchronous throw is a faulted call.
        public PendingCall(IJsonFunction function, string argumentsJson, int fd, bool cancelled)
        {
            if (function == null) throw new ArgumentNullException("function");
            _function = function;
            if (cancelled) _source.Cancel();
            Task<string> task;
            try { task = function.InvokeAsync(argumentsJson, _source.Token); }
            catch (Exception error) { task = Completion.Faulted(error); }
            _task = task ?? Completion.Faulted(new InvalidOperationException("the tool returned no task"));
            _task.ContinueWith(
                delegate(Task<string> _) { Posix.Signal(fd); },
                CancellationToken.None,
                TaskContinuationOptions.ExecuteSynchronously,
                TaskScheduler.Default);
        }

        // Asks the call to stop (its token fires); the caller still waits for the byte.
        public void Cancel()
        {
            _source.Cancel();
        }

        // The outcome, once the byte has been written: the result JSON, or a status letter and
        // a message. Frees the token source: call it once.
        public string Finish()
        {
            if (!_task.IsCompleted) throw new InvalidOperationException("the .NET call has not finished");
            _source.Dispose();
            if (_task.IsFaulted) return Failure(_task.Exception);
            if (_task.IsCanceled) return Cancelled + "the .NET task was cancelled";
            return _task.Result;
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
