// Envoy's Authorization service as @bufbuild/protobuf descriptors, for Connect
// (bench/connect-hello.ts), built from the protobufjs parse keygate already makes of the
// same .proto files (src/authorizer-grpc/envoy-protos.ts): no generated code, no second
// copy of the protos.
//
// protobufjs's own `toDescriptor` (protobufjs/ext/descriptor) is not enough for
// @bufbuild/protobuf: it writes type names relative to the referring scope, one file per
// package without imports, and map entries protoc would not name. So the descriptors are
// written here from the reflection objects, as protoc would: one FileDescriptorProto per
// .proto file (the file the parser read each top-level type from), fully qualified type
// names, the imports a file's fields need, files ordered imports first. Only the types
// the service reaches through its messages' fields are written: options and their
// extensions are not (they decide nothing on the wire).
import { create, createFileRegistry, type DescMethodUnary, type MessageInitShape } from '@bufbuild/protobuf'
import { protoCamelCase } from '@bufbuild/protobuf/reflect'
import {
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as FieldType,
  FileDescriptorSetSchema,
  type DescriptorProtoSchema,
  type EnumDescriptorProtoSchema,
  type FieldDescriptorProtoSchema,
  type FileDescriptorProtoSchema
} from '@bufbuild/protobuf/wkt'
import {
  AUTHORIZATION_SERVICE, envoyAuthRoot, includeDirs
} from '@keygate/gateway/dist/authorizer-grpc/envoy-protos.js'
import protobuf from 'protobufjs'

type FileInit = MessageInitShape<typeof FileDescriptorProtoSchema>
type MessageInit = MessageInitShape<typeof DescriptorProtoSchema>
type FieldInit = MessageInitShape<typeof FieldDescriptorProtoSchema>
type EnumInit = MessageInitShape<typeof EnumDescriptorProtoSchema>

const SCALARS: Record<string, FieldType> = {
  double: FieldType.DOUBLE,
  float: FieldType.FLOAT,
  int64: FieldType.INT64,
  uint64: FieldType.UINT64,
  int32: FieldType.INT32,
  fixed64: FieldType.FIXED64,
  fixed32: FieldType.FIXED32,
  bool: FieldType.BOOL,
  string: FieldType.STRING,
  bytes: FieldType.BYTES,
  uint32: FieldType.UINT32,
  sfixed32: FieldType.SFIXED32,
  sfixed64: FieldType.SFIXED64,
  sint32: FieldType.SINT32,
  sint64: FieldType.SINT64
}

/** a top-level type or service, with the package it is declared in */
type TopLevel = protobuf.Type | protobuf.Enum | protobuf.Service

interface File {
  name: string
  pkg: string
  syntax: string
  tops: TopLevel[]
  imports: Set<string>
}

/** Envoy's `envoy.service.auth.v3.Authorization/Check`, its messages resolved in a registry of their own. */
export function envoyCheckMethod (): DescMethodUnary {
  const root = envoyAuthRoot()
  const service = root.lookupService(AUTHORIZATION_SERVICE)
  const files = new Map<string, File>()
  const seen = new Set<TopLevel>()
  const dirs = includeDirs()

  const topOf = (t: protobuf.ReflectionObject): TopLevel => {
    let top = t
    while (top.parent instanceof protobuf.Type) top = top.parent
    return top as TopLevel
  }
  const fileOf = (top: TopLevel): File => {
    const pkg = top.parent?.fullName.slice(1) ?? ''
    // (the bundled google/protobuf types come from JSON, without a file name: one file per package)
    const absolute = top.filename
    const name = absolute === null
      ? `${pkg.replaceAll('.', '/')}.proto`
      : dirs.reduce((n, d) => n.startsWith(`${d}/`) ? n.slice(d.length + 1) : n, absolute)
    let file = files.get(name)
    if (file === undefined) {
      const syntax = (top as unknown as { _edition: string | null })._edition ?? 'proto3'
      if (syntax !== 'proto3' && syntax !== 'proto2') throw new Error(`${name}: edition ${syntax} not handled`)
      file = { name, pkg, syntax, tops: [], imports: new Set() }
      files.set(name, file)
    }
    if (file.pkg !== pkg) throw new Error(`${name}: two packages`)
    return file
  }
  // every top-level type the service reaches, and the files that declare them
  const reach = (t: protobuf.ReflectionObject, from?: File): void => {
    const top = topOf(t)
    const file = fileOf(top)
    if (from !== undefined && from !== file) from.imports.add(file.name)
    if (seen.has(top)) return
    seen.add(top)
    file.tops.push(top)
    const walk = (type: protobuf.Type): void => {
      for (const f of type.fieldsArray) {
        f.resolve()
        if (f.resolvedType !== null) reach(f.resolvedType, file)
      }
      for (const n of type.nestedArray) if (n instanceof protobuf.Type) walk(n)
    }
    if (top instanceof protobuf.Type) walk(top)
    if (top instanceof protobuf.Service) {
      for (const m of top.methodsArray) {
        m.resolve()
        if (m.resolvedRequestType !== null) reach(m.resolvedRequestType, file)
        if (m.resolvedResponseType !== null) reach(m.resolvedResponseType, file)
      }
    }
  }
  reach(service)

  // imports first
  const ordered: File[] = []
  const state = new Map<string, 'open' | 'done'>()
  const visit = (file: File): void => {
    const s = state.get(file.name)
    if (s === 'done') return
    if (s === 'open') throw new Error(`${file.name}: circular imports`)
    state.set(file.name, 'open')
    for (const i of file.imports) visit(files.get(i) as File)
    state.set(file.name, 'done')
    ordered.push(file)
  }
  for (const file of files.values()) visit(file)

  const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: ordered.map(fileProto) }))
  const check = registry.getService(AUTHORIZATION_SERVICE)?.method['check']
  if (check?.methodKind !== 'unary') throw new Error(`${AUTHORIZATION_SERVICE}/Check: not in the registry`)
  return check as DescMethodUnary
}

function fileProto (file: File): FileInit {
  const p: FileInit = {
    name: file.name,
    package: file.pkg,
    dependency: [...file.imports],
    syntax: file.syntax,
    messageType: [],
    enumType: [],
    service: []
  }
  for (const top of file.tops) {
    if (top instanceof protobuf.Type) p.messageType?.push(messageProto(top))
    else if (top instanceof protobuf.Enum) p.enumType?.push(enumProto(top))
    else {
      p.service?.push({
        name: top.name,
        method: top.methodsArray.map((m) => ({
          name: m.name,
          inputType: m.resolvedRequestType?.fullName ?? '',
          outputType: m.resolvedResponseType?.fullName ?? '',
          clientStreaming: m.requestStream === true,
          serverStreaming: m.responseStream === true
        }))
      })
    }
  }
  return p
}

function messageProto (type: protobuf.Type): MessageInit {
  const p: MessageInit = {
    name: type.name,
    field: [],
    nestedType: [],
    enumType: [],
    oneofDecl: type.oneofsArray.map((o) => ({ name: o.name }))
  }
  for (const f of type.fieldsArray) {
    if (f instanceof protobuf.MapField) {
      // protoc's map entry: a nested message `<FieldName>Entry` of key = 1, value = 2
      const entry = `${protoCamelCase(f.name).replace(/^./, (c) => c.toUpperCase())}Entry`
      p.field?.push({
        ...fieldProto(f, type),
        type: FieldType.MESSAGE,
        typeName: `${type.fullName}.${entry}`,
        label: Label.REPEATED
      })
      p.nestedType?.push({
        name: entry,
        field: [
          { name: 'key', jsonName: 'key', number: 1, label: Label.OPTIONAL, type: SCALARS[f.keyType] },
          { ...valueType(f), name: 'value', jsonName: 'value', number: 2, label: Label.OPTIONAL }
        ],
        options: { mapEntry: true }
      })
    } else {
      p.field?.push(fieldProto(f, type))
    }
  }
  for (const n of type.nestedArray) {
    if (n instanceof protobuf.Type) p.nestedType?.push(messageProto(n))
    else if (n instanceof protobuf.Enum) p.enumType?.push(enumProto(n))
  }
  return p
}

function fieldProto (f: protobuf.Field, owner: protobuf.Type): FieldInit {
  const p: FieldInit = {
    name: f.name,
    jsonName: protoCamelCase(f.name),
    number: f.id,
    label: f.repeated ? Label.REPEATED : Label.OPTIONAL,
    ...valueType(f)
  }
  if (f.partOf !== null) p.oneofIndex = owner.oneofsArray.indexOf(f.partOf)
  if (f.options?.['proto3_optional'] === true) p.proto3Optional = true
  if (f.repeated && !f.packed && p.type !== FieldType.MESSAGE && p.type !== FieldType.STRING &&
    p.type !== FieldType.BYTES) p.options = { packed: false }
  return p
}

/** a field's (or a map's value's) type */
function valueType (f: protobuf.Field): Pick<FieldInit, 'type' | 'typeName'> {
  f.resolve()
  const t = f.resolvedType
  if (t instanceof protobuf.Type) return { type: FieldType.MESSAGE, typeName: t.fullName }
  if (t instanceof protobuf.Enum) return { type: FieldType.ENUM, typeName: t.fullName }
  const scalar = SCALARS[f.type]
  if (scalar === undefined) throw new Error(`${f.fullName}: type ${f.type} not handled`)
  return { type: scalar }
}

function enumProto (e: protobuf.Enum): EnumInit {
  return { name: e.name, value: Object.entries(e.values).map(([name, number]) => ({ name, number })) }
}
