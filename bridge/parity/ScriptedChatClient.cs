// The MEAI side of `tether_clr.testing.parity`: a scripted IChatClient under Microsoft.Extensions.AI's own
// FunctionInvokingChatClient. Compiled at run time against the real assemblies (TETHER_MEAI_DIR), never
// committed as a DLL, and never part of the bridge (bridge.py compiles bridge/*.cs only, not this folder).
//
// One call per request: the first GetResponseAsync answers with the call's FunctionCallContent, the
// invoker runs the function, and the second request carries the FunctionResultContent it sends back,
// which is captured; the answer to it is a final text. So an approval request or a cancelled request
// affects exactly one call. No .NET thread here calls into Python: Python blocks on Run() instead.
//
// mcs: Mono's mscorlib has its own IAsyncEnumerable, so the package's one is named through an alias.
extern alias BCL;

using System;
using System.Collections.Generic;
using System.Linq;
using System.Text.Json;
using System.Threading;
using System.Threading.Tasks;
using Microsoft.Extensions.AI;
using AsyncUpdates = BCL::System.Collections.Generic.IAsyncEnumerable<Microsoft.Extensions.AI.ChatResponseUpdate>;

namespace Tether.Parity
{
    public sealed class ScriptedChatClient : IChatClient
    {
        readonly FunctionCallContent _call;

        public ScriptedChatClient(FunctionCallContent call) { _call = call; }

        public int Requests { get; private set; }

        public List<FunctionResultContent> Results { get; } = new List<FunctionResultContent>();

        public Task<ChatResponse> GetResponseAsync(IEnumerable<ChatMessage> messages, ChatOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            Requests++;
            if (Requests == 1)
                return Task.FromResult(new ChatResponse(new ChatMessage(ChatRole.Assistant, new List<AIContent> { _call })));
            foreach (var message in messages)
                foreach (var content in message.Contents)
                {
                    var result = content as FunctionResultContent;
                    if (result != null && !Results.Contains(result)) Results.Add(result);
                }
            return Task.FromResult(new ChatResponse(new ChatMessage(ChatRole.Assistant, "done")));
        }

        public AsyncUpdates GetStreamingResponseAsync(IEnumerable<ChatMessage> messages, ChatOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            throw new NotSupportedException("the parity client answers GetResponseAsync only");
        }

        public object GetService(Type serviceType, object serviceKey = null)
        {
            return serviceType != null && serviceType.IsInstanceOfType(this) ? this : null;
        }

        public void Dispose() { }
    }

    public static class ParityRun
    {
        static readonly Func<string, IDictionary<string, object>> Parse =
            text => JsonSerializer.Deserialize<Dictionary<string, object>>(text, AIJsonUtilities.DefaultOptions);

        /// A [Description] method as the AIFunction a MEAI user makes of it (AIFunctionFactory's defaults;
        /// an instance method on a fresh instance of its type, as the bridge runs it), named as the bridge
        /// names it (the factory would drop an "Async" suffix).
        public static AIFunction FromMethod(System.Reflection.MethodInfo method, string name)
        {
            // (object): with mcs, a bare null binds the wrong Create overload.
            object target = method.IsStatic ? null : Activator.CreateInstance(method.DeclaringType);
            return AIFunctionFactory.Create(method, target, new AIFunctionFactoryOptions { Name = name });
        }

        /// A FunctionCallContent as a MEAI chat client makes one from a model's argument text: parsed by
        /// System.Text.Json into JsonElement values, or, when the text does not parse, Exception set.
        public static FunctionCallContent Call(string callId, string name, string argumentsText)
        {
            return FunctionCallContent.CreateFromParsedArguments(argumentsText, callId, name, Parse);
        }

        /// Runs one call through FunctionInvokingChatClient (default options) and returns what happened as
        /// JSON: {"requests", "results": [{"call_id", "result", "exception"}], "approval_requested",
        /// "error"} ("error": the exception GetResponseAsync threw, as "Type: message").
        public static string Run(IList<AIFunction> functions, string callId, string name, string argumentsText, bool cancelled)
        {
            var scripted = new ScriptedChatClient(Call(callId, name, argumentsText));
            var invoker = new FunctionInvokingChatClient(scripted);
            var options = new ChatOptions { Tools = functions.Cast<AITool>().ToList() };
            var source = new CancellationTokenSource();
            if (cancelled) source.Cancel();
            ChatResponse response = null;
            string error = null;
            try
            {
                var messages = new List<ChatMessage> { new ChatMessage(ChatRole.User, "run the call") };
                response = invoker.GetResponseAsync(messages, options, source.Token).GetAwaiter().GetResult();
            }
            catch (Exception exc)
            {
                error = Describe(exc);
            }
            bool approval = response != null && response.Messages.SelectMany(m => m.Contents).OfType<FunctionApprovalRequestContent>().Any();
            var results = scripted.Results.Select(r => new Dictionary<string, object>
            {
                { "call_id", r.CallId },
                { "result", ResultJson(r) },
                { "exception", r.Exception == null ? null : Describe(r.Exception) },
            }).ToList();
            var report = new Dictionary<string, object>
            {
                { "requests", scripted.Requests },
                { "results", results },
                { "approval_requested", approval },
                { "error", error },
            };
            return JsonSerializer.Serialize(report, AIJsonUtilities.DefaultOptions);
        }

        /// A FunctionResultContent's Result as MEAI serializes it for a model (AIJsonUtilities.DefaultOptions).
        public static string ResultJson(FunctionResultContent result)
        {
            return JsonSerializer.Serialize(result.Result, AIJsonUtilities.DefaultOptions);
        }

        static string Describe(Exception exc)
        {
            while ((exc is AggregateException || exc is System.Reflection.TargetInvocationException) && exc.InnerException != null)
                exc = exc.InnerException;
            return exc.GetType().FullName + ": " + exc.Message;
        }
    }
}
