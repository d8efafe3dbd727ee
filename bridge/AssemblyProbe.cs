// Resolves assemblies that are not next to the application from folders the
// Python side registers (TETHER_MEAI_DIR, a NuGet cache), so a tool assembly
// that depends on Microsoft.Extensions.AI loads without copying DLLs around.
using System;
using System.Collections.Generic;
using System.IO;
using System.Reflection;

namespace Tether.Bridge
{
    public static class AssemblyProbe
    {
        static readonly List<string> Directories = new List<string>();
        static bool _hooked;

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

        static Assembly Resolve(object sender, ResolveEventArgs args)
        {
            var name = new AssemblyName(args.Name).Name;
            foreach (var loaded in AppDomain.CurrentDomain.GetAssemblies())
                if (loaded.GetName().Name == name) return loaded;
            string[] directories;
            lock (Directories) directories = Directories.ToArray();
            foreach (var directory in directories)
            {
                var candidate = Path.Combine(directory, name + ".dll");
                if (File.Exists(candidate)) return Assembly.LoadFrom(candidate);
            }
            return null;
        }
    }
}
