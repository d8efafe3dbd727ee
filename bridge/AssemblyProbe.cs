// Where tool assemblies and their dependencies come from.
//
// Mono: tool assemblies load into the one AppDomain; dependencies that are not
// next to the application resolve from the folders the Python side registers
// (a loaded tool assembly's own folder, TETHER_MEAI_DIR, a NuGet cache).
//
// CoreCLR: a folder can hold newer copies of assemblies the runtime ships itself
// (Microsoft.Extensions.AI 10 needs System.Text.Json 10; .NET 8 ships 8.0). In the
// default load context the trusted-platform copy wins every bind, no resolve event
// fires for it, and loading the newer copy by path into the default context fails
// (FileLoadException, measured on .NET 8). So tool assemblies load into one load
// context of their own, whose Load() takes a dependency from the registered
// folders when the runtime has none or only an older one, and otherwise defers to
// the default context, so the runtime's own System.Memory, System.Runtime, ... stay
// shared: the way an app's bin/ folder wins over the shared framework. The context
// type is emitted at run time because the bridge compiles against Mono's mscorlib,
// which has no AssemblyLoadContext.
using System;
using System.Collections.Generic;
using System.IO;
using System.Reflection;
using System.Reflection.Emit;

namespace Tether.Bridge
{
    public static class AssemblyProbe
    {
        const string LoadContextTypeName = "System.Runtime.Loader.AssemblyLoadContext";

        static readonly List<string> Directories = new List<string>();
        static readonly Dictionary<string, Assembly> InContext = new Dictionary<string, Assembly>(StringComparer.OrdinalIgnoreCase);
        static bool _hooked;
        static object _context;
        static MethodInfo _loadFromPath;
        static Dictionary<string, string> _platform;

        public static void AddDirectory(string directory)
        {
            lock (Directories)
            {
                var full = Path.GetFullPath(directory);
                if (!Directories.Contains(full)) Directories.Add(full);
                if (_hooked) return;
                AppDomain.CurrentDomain.AssemblyResolve += Resolve;
                _hooked = true;
            }
        }

        public static string[] Registered()
        {
            lock (Directories) return Directories.ToArray();
        }

        // True where tool assemblies get a load context of their own (CoreCLR).
        public static bool HasLoadContexts
        {
            get { return Type.GetType(LoadContextTypeName) != null || typeof(object).Assembly.GetType(LoadContextTypeName) != null; }
        }

        // Loads a tool assembly: into the tool load context on CoreCLR, else with LoadFrom.
        public static Assembly LoadToolAssembly(string path)
        {
            var full = Path.GetFullPath(path);
            AddDirectory(Path.GetDirectoryName(full));
            if (!HasLoadContexts) return Assembly.LoadFrom(full);
            lock (Directories)
            {
                var name = AssemblyName.GetAssemblyName(full).Name;
                Assembly existing;
                if (InContext.TryGetValue(name, out existing)) return existing;
                var context = Context(); // sets _loadFromPath on first use
                var loaded = (Assembly)_loadFromPath.Invoke(context, new object[] { full });
                InContext[name] = loaded;
                return loaded;
            }
        }

        // The tool load context's Load(): a registered folder's copy when the runtime has no
        // copy of that assembly or an older one; null (defer to the default context) otherwise.
        public static Assembly LoadIntoContext(object context, AssemblyName requested)
        {
            lock (Directories)
            {
                Assembly existing;
                if (InContext.TryGetValue(requested.Name, out existing)) return existing;
                var candidate = Find(requested.Name);
                if (candidate == null) return null;
                var version = AssemblyName.GetAssemblyName(candidate).Version;
                string shipped;
                if (_platform.TryGetValue(requested.Name, out shipped) && AssemblyName.GetAssemblyName(shipped).Version >= version)
                    return null;
                var loaded = (Assembly)_loadFromPath.Invoke(context, new object[] { candidate });
                InContext[requested.Name] = loaded;
                return loaded;
            }
        }

        static string Find(string name)
        {
            foreach (var directory in Directories)
            {
                var candidate = Path.Combine(directory, name + ".dll");
                if (File.Exists(candidate)) return candidate;
            }
            return null;
        }

        static object Context()
        {
            if (_context != null) return _context;
            var baseType = Type.GetType(LoadContextTypeName) ?? typeof(object).Assembly.GetType(LoadContextTypeName, true);
            _platform = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
            var list = AppDomain.CurrentDomain.GetData("TRUSTED_PLATFORM_ASSEMBLIES") as string ?? "";
            foreach (var entry in list.Split(Path.PathSeparator))
                if (entry.Length > 0) _platform[Path.GetFileNameWithoutExtension(entry)] = entry;
            _loadFromPath = baseType.GetMethod("LoadFromAssemblyPath", new[] { typeof(string) });
            _context = Activator.CreateInstance(EmitContextType(baseType), "tether_clr tools");
            return _context;
        }

        // sealed class ToolLoadContext : AssemblyLoadContext {
        //     public ToolLoadContext(string name) : base(name, false) {}
        //     protected override Assembly Load(AssemblyName n) { return AssemblyProbe.LoadIntoContext(this, n); } }
        static Type EmitContextType(Type baseType)
        {
            var assembly = AssemblyBuilder.DefineDynamicAssembly(new AssemblyName("Tether.Bridge.LoadContext"), AssemblyBuilderAccess.Run);
            var module = assembly.DefineDynamicModule("Tether.Bridge.LoadContext");
            var type = module.DefineType("Tether.Bridge.ToolLoadContext", TypeAttributes.Public | TypeAttributes.Sealed | TypeAttributes.Class, baseType);
            var baseCtor = baseType.GetConstructor(BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic, null,
                new[] { typeof(string), typeof(bool) }, null);
            var ctor = type.DefineConstructor(MethodAttributes.Public, CallingConventions.Standard, new[] { typeof(string) });
            var il = ctor.GetILGenerator();
            il.Emit(OpCodes.Ldarg_0);
            il.Emit(OpCodes.Ldarg_1);
            il.Emit(OpCodes.Ldc_I4_0);
            il.Emit(OpCodes.Call, baseCtor);
            il.Emit(OpCodes.Ret);
            var baseLoad = baseType.GetMethod("Load", BindingFlags.Instance | BindingFlags.NonPublic, null, new[] { typeof(AssemblyName) }, null);
            var load = type.DefineMethod("Load", MethodAttributes.Family | MethodAttributes.Virtual | MethodAttributes.HideBySig,
                typeof(Assembly), new[] { typeof(AssemblyName) });
            il = load.GetILGenerator();
            il.Emit(OpCodes.Ldarg_0);
            il.Emit(OpCodes.Ldarg_1);
            il.Emit(OpCodes.Call, typeof(AssemblyProbe).GetMethod("LoadIntoContext"));
            il.Emit(OpCodes.Ret);
            type.DefineMethodOverride(load, baseLoad);
            return type.CreateType();
        }

        static Assembly Resolve(object sender, ResolveEventArgs args)
        {
            var name = new AssemblyName(args.Name).Name;
            foreach (var loaded in AppDomain.CurrentDomain.GetAssemblies())
                if (loaded.GetName().Name == name) return loaded;
            string candidate;
            lock (Directories) candidate = Find(name);
            return candidate == null ? null : Assembly.LoadFrom(candidate);
        }
    }
}
