// Microsoft.Extensions.AI content records, built and read by reflection so the
// bridge compiles without the package: FunctionResultContent out, FunctionCallContent in.
using System;
using System.Collections;
using System.Linq;
using System.Reflection;

namespace Tether.Bridge
{
    public static class Records
    {
        public const string AbstractionsAssembly = "Microsoft.Extensions.AI.Abstractions";

        public static Assembly FindAbstractions()
        {
            return AppDomain.CurrentDomain.GetAssemblies().FirstOrDefault(a => a.GetName().Name == AbstractionsAssembly);
        }

        // A real FunctionResultContent whose Result is the JSON value as a JsonElement and,
        // for failures, whose Exception carries "CODE: message" (it is never serialized).
        public static object CreateFunctionResult(string callId, string name, string resultJson, string error)
        {
            var assembly = FindAbstractions();
            if (assembly == null) throw new InvalidOperationException(AbstractionsAssembly + " is not loaded");
            var type = assembly.GetType("Microsoft.Extensions.AI.FunctionResultContent", true);
            var aiFunction = assembly.GetType("Microsoft.Extensions.AI.AIFunction", true);
            // A detached JsonElement of the System.Text.Json this MEAI uses (its JsonSchema's type).
            object result = SystemTextJson.For(aiFunction.GetProperty("JsonSchema").PropertyType.Assembly).Parse(resultJson);
            object content = null;
            foreach (var constructor in type.GetConstructors())
            {
                var parameters = constructor.GetParameters();
                if (parameters.Length == 2 && parameters[0].ParameterType == typeof(string))
                    content = constructor.Invoke(new[] { callId, result });
                else if (parameters.Length == 3 && parameters[1].ParameterType == typeof(string))
                    content = constructor.Invoke(new[] { callId, name, result });
                if (content != null) break;
            }
            if (content == null) throw new NotSupportedException("no known FunctionResultContent constructor in this " + AbstractionsAssembly);
            if (error != null)
            {
                var exception = type.GetProperty("Exception");
                if (exception != null && exception.CanWrite) exception.SetValue(content, new InvalidOperationException(error), null);
            }
            return content;
        }

        // FunctionCallContent.Exception: set when its client could not parse the model's argument
        // text (Arguments is then null). The message, with any inner exceptions named after it.
        public static string ArgumentsError(object functionCallContent)
        {
            var property = functionCallContent.GetType().GetProperty("Exception");
            var error = property == null ? null : property.GetValue(functionCallContent, null) as Exception;
            if (error == null) return null;
            var message = error.Message;
            for (var inner = error.InnerException; inner != null; inner = inner.InnerException)
                message += " (" + inner.GetType().FullName + ": " + inner.Message + ")";
            return message;
        }

        // FunctionCallContent.Arguments (IDictionary<string, object?>, values often JsonElement) -> JSON text.
        public static string ArgumentsJson(object functionCallContent)
        {
            var property = functionCallContent.GetType().GetProperty("Arguments");
            if (property == null) throw new ArgumentException(functionCallContent.GetType().FullName + " has no Arguments property");
            var arguments = property.GetValue(functionCallContent, null) as IDictionary;
            return arguments == null ? "{}" : JsonWriter.Write(arguments);
        }
    }
}
